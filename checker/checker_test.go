package checker

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
)

func TestMerge(t *testing.T) {
	cases := []struct {
		in   []Validity
		want Validity
	}{
		{nil, Valid},
		{[]Validity{Valid}, Valid},
		{[]Validity{Unknown}, Unknown},
		{[]Validity{Invalid}, Invalid},
		{[]Validity{Valid, Unknown}, Unknown},
		{[]Validity{Unknown, Valid}, Unknown},
		{[]Validity{Valid, Invalid}, Invalid},
		{[]Validity{Unknown, Invalid}, Invalid},
		{[]Validity{Invalid, Unknown, Valid}, Invalid},
		{[]Validity{Valid, Valid}, Valid},
	}
	for _, c := range cases {
		if got := Merge(c.in...); got != c.want {
			t.Errorf("Merge(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestValidityJSON(t *testing.T) {
	for v, want := range map[Validity]string{Valid: "true", Invalid: "false", Unknown: `"unknown"`} {
		b, err := json.Marshal(v)
		if err != nil || string(b) != want {
			t.Fatalf("marshal %v = %s, %v", v, b, err)
		}
		var back Validity = 99
		if err := json.Unmarshal(b, &back); err != nil || back != v {
			t.Errorf("round trip %s = %v, %v", b, back, err)
		}
	}
	for _, bad := range []string{`"true"`, `1`, `null`, `"valid"`} {
		var v Validity
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("unmarshal %s: no error", bad)
		}
	}
	var zero Validity
	if zero != Unknown {
		t.Error("the zero Validity must be unknown")
	}
}

func TestRunAllRecoversPanics(t *testing.T) {
	cs := []Checker{
		{Name: "boom", Check: func(context.Context, Input) Result { panic("kaboom") }},
		{Name: "fine", Check: func(context.Context, Input) Result { return Result{Valid: Valid} }},
	}
	res := Run(context.Background(), Input{}, []string{"boom", "fine"}, cs)
	b := res.Checkers["boom"]
	if b.Valid != Unknown || !strings.Contains(b.Error, "kaboom") || !b.Gating {
		t.Fatalf("panicking checker = %+v", b)
	}
	if res.Valid != Unknown || len(res.Reasons) != 1 {
		t.Errorf("verdict = %v reasons=%v, want unknown", res.Valid, res.Reasons)
	}
	if res := Run(context.Background(), Input{}, []string{"fine"}, cs); res.Valid != Valid || res.Checkers["boom"].Gating {
		t.Errorf("ungated panic changed the verdict: %v", res.Valid)
	}
	if res := Run(context.Background(), Input{}, []string{"fine", "absent"}, cs); res.Valid != Unknown {
		t.Errorf("absent gating checker: verdict %v, want unknown", res.Valid)
	}
}

func TestRunAllBudget(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	cs := []Checker{{Name: "stuck", Check: func(context.Context, Input) Result { <-block; return Result{Valid: Valid} }}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := Run(ctx, Input{}, []string{"stuck"}, cs)
	if res.Valid != Unknown || res.Checkers["stuck"].Error == "" {
		t.Fatalf("stuck checker = %+v", res.Checkers["stuck"])
	}
	// The checker never returns, so only the budget can end the wait.
	res = Run(context.Background(), Input{Budget: time.Millisecond}, []string{"stuck"}, cs)
	if res.Valid != Unknown || !strings.Contains(res.Checkers["stuck"].Error, "deadline") {
		t.Fatalf("over-budget checker = %+v", res.Checkers["stuck"])
	}
}

func TestResultDetailsClash(t *testing.T) {
	if _, err := json.Marshal(Result{Details: map[string]int{"valid": 1}}); err == nil {
		t.Error("a details field named valid was accepted")
	}
	b, err := json.Marshal(Result{Valid: Valid, Details: []int{1}})
	if err != nil || !strings.Contains(string(b), `"details":[1]`) {
		t.Errorf("non-object details: %s %v", b, err)
	}
}

// TestRunOneGrace: a checker that watches its budget hands in its own
// unknown with evidence; one that says true too late is unknown.
func TestRunOneGrace(t *testing.T) {
	cs := []Checker{
		{Name: "polite", Check: func(ctx context.Context, _ Input) Result {
			<-ctx.Done()
			return Result{Valid: Unknown, Error: "ran out", Details: map[string]int{"decided": 3}}
		}},
		{Name: "late-true", Check: func(ctx context.Context, _ Input) Result {
			<-ctx.Done()
			return Result{Valid: Valid}
		}},
	}
	res := Run(context.Background(), Input{Budget: 1}, []string{"polite", "late-true"}, cs)
	if p := res.Checkers["polite"]; p.Valid != Unknown || p.Error != "ran out" || p.Details == nil {
		t.Errorf("polite = %+v", p)
	}
	if l := res.Checkers["late-true"]; l.Valid != Unknown {
		t.Errorf("late true = %+v", l)
	}
}

// TestCrashInResultsJSON: a crashing checker is unknown with its error in
// results.json.
func TestCrashInResultsJSON(t *testing.T) {
	cs := []Checker{{Name: "register", Check: func(context.Context, Input) Result { panic("model exploded") }}}
	res := Run(context.Background(), Input{}, []string{"register"}, cs)
	path := filepath.Join(t.TempDir(), "results.json")
	if err := WriteResults(path, res); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	r := back.Checkers["register"]
	if back.Valid != Unknown || r.Valid != Unknown || !strings.Contains(r.Error, "model exploded") {
		t.Fatalf("results.json: %+v", back)
	}
}

// TestRunNoSilentVerdict: an answer other than true always carries a
// reason, even from a checker that forgot to give one.
func TestRunNoSilentVerdict(t *testing.T) {
	cs := []Checker{
		{Name: "mute", Check: func(context.Context, Input) Result { return Result{Valid: Invalid} }},
		{Name: "shrug", Check: func(context.Context, Input) Result { return Result{Valid: Unknown} }},
		{Name: "fine", Check: func(context.Context, Input) Result { return Result{Valid: Valid} }},
	}
	res := Run(context.Background(), Input{}, []string{"mute", "shrug", "fine"}, cs)
	for _, n := range []string{"mute", "shrug"} {
		if e := res.Checkers[n].Error; !strings.Contains(e, "without a reason") || !strings.Contains(e, n) {
			t.Errorf("%s: error %q", n, e)
		}
	}
	if e := res.Checkers["fine"].Error; e != "" {
		t.Errorf("a valid result got an error: %q", e)
	}
}

// TestRunAlwaysGates: a checker marked Always gates whatever the gate
// names, and says so.
func TestRunAlwaysGates(t *testing.T) {
	cs := []Checker{
		{Name: "data", Always: true, Check: func(context.Context, Input) Result { return Result{Valid: Unknown, Error: "broken"} }},
		{Name: "fine", Check: func(context.Context, Input) Result { return Result{Valid: Valid} }},
	}
	res := Run(context.Background(), Input{}, []string{"fine"}, cs)
	if res.Valid != Unknown || !res.Checkers["data"].Gating || len(res.Gate) != 1 {
		t.Fatalf("verdict %v, data %+v, gate %v", res.Valid, res.Checkers["data"], res.Gate)
	}
	if !strings.Contains(strings.Join(res.Reasons, ";"), "data: unknown: broken") {
		t.Errorf("reasons %v", res.Reasons)
	}
	if res := Run(context.Background(), Input{}, []string{"fine", "data"}, cs); res.Valid != Unknown || len(res.Reasons) != 1 {
		t.Errorf("named and always: %v %v", res.Valid, res.Reasons)
	}
}

func TestDemotedIsInstant(t *testing.T) {
	if !IsInstant(history.FDemoted) || IsInstant(history.FCampaign) || IsInstant(history.FComplete) {
		t.Fatal("demoted must pair on its own; campaign and complete must not")
	}
}
