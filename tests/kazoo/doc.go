// Package kazoo holds the integration tests of the Python subject
// (`--recipe kazoo`, kazoo's Lock recipe through /usr/bin/python3, issue
// 13): a fenced run under pause-holder is valid, an unfenced one is
// caught, and a machine without python3-kazoo (or a workload kazoo does
// not serve) is refused on the first line, exit 255, with nothing made.
// See tests/core for why integration tests are split into packages.
package kazoo
