#!/usr/bin/python3
"""The repository's third-party Python election worker with one known bug
of the election zoo (docs/zoo.md, no-term): every leader presents the term
0 instead of its node's czxid, so terms neither grow nor tell leaders
apart. term-order catches it without any fault.

It runs the worker of client/subjects/conformance/testdata (written from
docs/worker-protocol.md alone) in this process, the candidate's answer and
task calls changed only in the term: one process, as the protocol asks.
"""

import os
import sys

sys.dont_write_bytecode = True  # nothing written beside the worker it runs
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "client", "subjects", "conformance", "testdata"))

import election_worker  # noqa: E402


class ZeroTerm(election_worker.Worker):
    def campaign(self, req):
        m = super().campaign(req)
        if m.get("type") == "ok":
            with self.mu:
                self.grants[req["key"]].term = 0
            m["token"] = 0
        return m


if __name__ == "__main__":
    election_worker.Worker = ZeroTerm
    sys.exit(election_worker.main())
