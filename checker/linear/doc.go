// Package linear judges linearizability with porcupine, key by key, from
// the history alone (checker.Input.History; the apply log is not read,
// and checker.Input.Fencing selects the register model's mode). It has
// two checkers.
//
// register (CheckRegister; NameRegister): the client-observed reads and
// writes of each key must be linearizable against the fenced register as
// the lock's user relies on it (regmodel.go): register.Decide's accept
// and reject rule for the run's mode, and on top of it two promises, an
// accepted write carries no lower token than the last accepted write, and
// it builds on the value its grant last observed (no lost update).
//
// mutex (CheckMutex; NameMutex): the acquires, releases and losses of
// each key must be linearizable against an owner-aware mutex
// (mutexmodel.go). No lease-based lock passes it under SIGSTOP of a
// holder, so it does not gate by default.
//
// For both, an operation answered info or never answered returns at
// infinity (it may have taken effect at any time after its invocation),
// and each key is cut into segments where no operation is open and the
// model's state is determined (segment.go), so porcupine searches
// segments, not whole keys, with the same answer.
//   - invalid: some key is not linearizable (LinearDetails.FailingKeys);
//     with checker.Input.Dir set, porcupine's page of the first failing
//     segment is written there.
//   - unknown: no key failed, but some key was not decided: porcupine ran
//     out of checker.Input.Budget (or was cancelled), the key was given
//     up, or (register) the fencing mode is missing or not one of off,
//     on, strict.
//   - valid: every key is linearizable.
package linear
