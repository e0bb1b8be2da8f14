package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/integrity"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/checker/linear"
	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

func TestValidateGate(t *testing.T) {
	if err := ValidateGate([]string{fence.NameDoubleWriter, stats.Name}); err != nil {
		t.Fatal(err)
	}
	if err := ValidateGate(nil); err != nil {
		t.Fatal(err)
	}
	err := ValidateGate([]string{fence.NameDoubleWriter, "mutexx"})
	if err == nil || !strings.Contains(err.Error(), `"mutexx"`) || !strings.Contains(err.Error(), fence.NameDoubleWriter) {
		t.Fatalf("err = %v", err)
	}
}

func TestResultsJSONShape(t *testing.T) {
	res := RunAll(context.Background(), checker.Input{History: checktest.LockHistory(), ApplyLog: checktest.LockLog()}, nil)
	if res.Valid != checker.Invalid {
		t.Fatalf("verdict = %v, reasons %v", res.Valid, res.Reasons)
	}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := checker.WriteResults(path, res); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["valid"] != false {
		t.Errorf("valid = %#v", m["valid"])
	}
	if g, _ := m["gate"].([]any); len(g) != 3 || g[0] != fence.NameDoubleWriter || g[1] != linear.NameRegister || g[2] != fence.NameWrongToken {
		t.Errorf("gate = %#v", m["gate"])
	}
	cs, _ := m["checkers"].(map[string]any)
	dw, _ := cs[fence.NameDoubleWriter].(map[string]any)
	if dw["valid"] != false || dw["gating"] != true {
		t.Errorf("double-writer = %v", dw)
	}
	vs, _ := dw["violations"].([]any)
	if len(vs) == 0 {
		t.Fatalf("violations = %#v", dw["violations"])
	}
	for _, x := range vs {
		v := x.(map[string]any)
		for _, k := range []string{"kind", "key", "tokens", "processes", "seqs", "values", "message", "entries"} {
			if _, ok := v[k]; !ok {
				t.Errorf("violation lacks %q: %v", k, v)
			}
		}
	}
	if dw["first_violation_seq"] != float64(4) {
		t.Errorf("first_violation_seq = %v", dw["first_violation_seq"])
	}
	st, _ := cs[stats.Name].(map[string]any)
	if st["valid"] != true {
		t.Errorf("stats valid = %v", st["valid"])
	}
	ops, _ := st["ops"].(map[string]any)
	for _, f := range []string{"acquire", "read", "write", "release", "session", "pause"} {
		o, _ := ops[f].(map[string]any)
		for _, k := range []string{"ok", "fail", "info"} {
			n, ok := o[k].(float64)
			if !ok || n != float64(int(n)) {
				t.Errorf("ops[%s][%s] = %#v", f, k, o[k])
			}
		}
	}

	back, err := checker.ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Valid != checker.Invalid || back.Checkers[stats.Name].Valid != checker.Valid || !back.Checkers[fence.NameDoubleWriter].Gating {
		t.Errorf("read back = %+v", back)
	}
	var d fence.DoubleWriterDetails
	if err := back.Checkers[fence.NameDoubleWriter].DecodeDetails(&d); err != nil {
		t.Fatal(err)
	}
	if len(d.Violations) != len(vs) || d.FirstViolationSeq != 4 {
		t.Errorf("decoded details = %+v", d)
	}
	// Read back and written again, the file is the same.
	b2, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	var m2 map[string]any
	if err := json.Unmarshal(b2, &m2); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(m2["checkers"]) != fmt.Sprint(m["checkers"]) {
		t.Error("results changed through ReadResults")
	}
}

func TestDefaultGate(t *testing.T) {
	if !slices.Equal(DefaultGate, []string{fence.NameDoubleWriter, linear.NameRegister, fence.NameWrongToken}) {
		t.Fatalf("default gate %v", DefaultGate)
	}
	if err := ValidateGate([]string{linear.NameMutex, linear.NameRegister}); err != nil {
		t.Fatal(err)
	}
}

// TestGeneratedHistoriesValid: simulated correct runs with many unknown
// operations, in every mode.
func TestGeneratedHistoriesValid(t *testing.T) {
	for seed := range uint64(20) {
		for _, mode := range []string{register.ModeOff, register.ModeOn, register.ModeStrict} {
			spec := checktest.GenSpec{Seed: seed, Events: 3000, Keys: 3, WorkersPerKey: 1 + int(seed%5), InfoShare: 0.3, Mode: mode}
			es, log := checktest.GenLockHistory(spec)
			in := checker.Input{History: es, ApplyLog: log, Fencing: mode}
			for _, c := range []checker.Checker{{Name: linear.NameRegister, Check: linear.CheckRegister}, {Name: linear.NameMutex, Check: linear.CheckMutex}, {Name: fence.NameDoubleWriter, Check: fence.CheckDoubleWriter}} {
				if r := c.Check(context.Background(), in); r.Valid != checker.Valid {
					t.Fatalf("%+v: %s = %v (%s)", spec, c.Name, r.Valid, r.Error)
				}
			}
		}
	}
}

// TestGeneratedStaleWrites: paused holders whose writes land late. With
// fencing the register refuses them and both resource checkers pass;
// without, both must fail, and the mutex fails either way.
func TestGeneratedStaleWrites(t *testing.T) {
	for seed := range uint64(10) {
		for _, mode := range []string{register.ModeOff, register.ModeOn} {
			spec := checktest.GenSpec{Seed: seed, Events: 3000, Keys: 2, WorkersPerKey: 3, InfoShare: 0.1, StaleShare: 0.05, Mode: mode}
			es, log := checktest.GenLockHistory(spec)
			in := checker.Input{History: es, ApplyLog: log, Fencing: mode}
			want := checker.Valid
			if mode == register.ModeOff {
				want = checker.Invalid
			}
			if r := linear.CheckRegister(context.Background(), in); r.Valid != want {
				t.Errorf("%+v: register = %v (%s), want %v", spec, r.Valid, r.Error, want)
			}
			if r := fence.CheckDoubleWriter(context.Background(), in); r.Valid != want {
				t.Errorf("%+v: double-writer = %v, want %v", spec, r.Valid, want)
			}
			if r := linear.CheckMutex(context.Background(), in); r.Valid != checker.Invalid {
				t.Errorf("%+v: mutex = %v, want false (a paused holder's lock was granted again)", spec, r.Valid)
			}
		}
	}
}

// TestBrokenHistoryIsNeverValid: the same apply log beside its history
// passes, beside an empty history or one with a repeated index it is
// unknown, whatever the gate (integrity always gates).
func TestBrokenHistoryIsNeverValid(t *testing.T) {
	es, log := checktest.GenLockHistory(checktest.GenSpec{Seed: 3, Events: 2000, Keys: 2, WorkersPerKey: 3,
		InfoShare: 0.1, Mode: register.ModeOn})
	gate := []string{fence.NameDoubleWriter}
	in := checker.Input{History: es, ApplyLog: log, Fencing: register.ModeOn}
	if res := RunAll(context.Background(), in, gate); res.Valid != checker.Valid {
		t.Fatalf("sound run: %v %v", res.Valid, res.Reasons)
	}
	dup := slices.Clone(es)
	dup[10].Index = dup[9].Index
	for name, h := range map[string][]history.Event{"empty history": nil, "repeated index": dup} {
		in.History = h
		res := RunAll(context.Background(), in, gate)
		if res.Valid != checker.Unknown || !res.Checkers[integrity.Name].Gating ||
			!strings.Contains(strings.Join(res.Reasons, "\n"), integrity.Name+": unknown: ") {
			t.Errorf("%s: verdict %v, reasons %v", name, res.Valid, res.Reasons)
		}
	}
}

// TestDefaultGateCatchesWrongToken: a fenced run whose worker reuses its
// first token keeps the data intact (the register turns the writes away),
// so the resource checkers pass; the default gate still fails it.
func TestDefaultGateCatchesWrongToken(t *testing.T) {
	es, log := checktest.GenLockHistory(checktest.GenSpec{Seed: 1, Events: 3000, Keys: 2, WorkersPerKey: 3,
		Mode: register.ModeOn, ReuseFirstToken: true})
	res := RunAll(context.Background(), checker.Input{History: es, ApplyLog: log, Fencing: register.ModeOn}, nil)
	for _, n := range []string{fence.NameDoubleWriter, linear.NameRegister, integrity.Name} {
		if v := res.Checkers[n].Valid; v != checker.Valid {
			t.Errorf("%s = %v (%s)", n, v, res.Checkers[n].Error)
		}
	}
	if res.Valid != checker.Invalid || !res.Checkers[fence.NameWrongToken].Gating {
		t.Fatalf("verdict %v, reasons %v", res.Valid, res.Reasons)
	}
}
