package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// fuzzBudget keeps one fuzz input from running away; an input that needs
// more is unknown, which is an allowed answer.
const fuzzBudget = 2 * time.Second

var fuzzModes = []string{register.ModeOff, register.ModeOn, register.ModeStrict, "", "bogus"}

// checkAll runs every checker through RunAll, as a run does, and demands a
// well-formed answer: a verdict, or unknown with a reason, and results that
// survive results.json.
func checkAll(t *testing.T, es []history.Event, log []register.Entry, mode string) {
	res := RunAll(context.Background(), checker.Input{History: es, ApplyLog: log, Fencing: mode, Budget: fuzzBudget}, DefaultGate)
	for name, r := range res.Checkers {
		if r.Valid != checker.Valid && (r.Error == "" || strings.Contains(r.Error, "without a reason")) {
			t.Fatalf("%s: %s without a reason", name, r.Valid)
		}
		if _, ok := r.Details.(map[string]string); ok && r.Error != "" && bytes.Contains([]byte(r.Error), []byte("panicked")) {
			t.Fatalf("%s panicked: %s", name, r.Error)
		}
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatalf("results do not encode: %v", err)
	}
}

func seedHistories() [][]history.Event {
	b := &checktest.Hist{}
	b.Section(0, "k", 10, 0, -1)
	b.Acquire(1, "k", 11).Read(1, "k", 11, 1, 10).WriteInv(1, "k", 2).Info(1, history.FWrite, "k")
	b.Acquire(2, "k", 12).Acquire(3, "k", 13).Instant(1, history.FLost, "k", &history.Value{})
	es, _ := checktest.GenLockHistory(checktest.GenSpec{Seed: 1, Events: 24, Keys: 1, WorkersPerKey: 3, InfoShare: 0.2, StaleShare: 0.05, Mode: register.ModeOff})
	return [][]history.Event{b.Events, es}
}

// FuzzHistoryFile feeds arbitrary bytes to the history reader and whatever
// it accepts to every checker: the reader gives events or an error, the
// checkers a verdict or unknown with a reason, and nothing panics.
func FuzzHistoryFile(f *testing.F) {
	for _, es := range seedHistories() {
		var buf bytes.Buffer
		for _, e := range es {
			line, err := e.Marshal()
			if err != nil {
				f.Fatal(err)
			}
			buf.Write(append(line, '\n'))
		}
		f.Add(buf.Bytes(), uint8(0))
	}
	f.Add([]byte(`{"index":0,"time":1,"process":"nemesis","type":"invoke","f":"pause","value":{"pid":1}}`), uint8(2))
	f.Add([]byte("{\"index\":0,\"time\":-5,\"process\":7,\"type\":\"ok\",\"f\":\"read\",\"key\":\"k\",\"value\":{\"n\":3}}\n\n"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		res, err := history.Read(bytes.NewReader(data))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("error without a message")
			}
			return
		}
		checkAll(t, res.Events, nil, fuzzModes[int(mode)%len(fuzzModes)])
	})
}

// FuzzCheckers builds histories from bytes directly, reaching event
// sequences the JSON layer would rarely produce: completions without
// invocations, reused processes, times going backwards, infinities.
func FuzzCheckers(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, uint8(0))
	f.Add(bytes.Repeat([]byte{3, 0x21, 5, 9}, 40), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		fs := []string{history.FAcquire, history.FRelease, history.FRead, history.FWrite, history.FLost,
			history.FSession, history.FLate, history.FPause, history.FResume, history.FFinalRead}
		types := []history.Type{history.Invoke, history.OK, history.Fail, history.Info}
		var es []history.Event
		var tm int64
		for i := 0; i+3 < len(data); i += 4 {
			op, who, val, dt := data[i], data[i+1], data[i+2], data[i+3]
			tm += int64(int8(dt)) // may go backwards
			p := history.Process(who & 7)
			if who&0x80 != 0 {
				p = history.Nemesis
			}
			v := &history.Value{N: checktest.I64(int64(val & 7)), PID: int(val & 1)}
			if val&0x08 != 0 {
				v.Token = checktest.I64(int64(val >> 4))
			}
			if val&0x10 != 0 {
				v.Current = checktest.I64(int64(val >> 5))
			}
			if val&0x40 != 0 {
				v.Of, v.State = history.FWrite, string(types[int(val>>1)%len(types)])
			}
			if val == 0xff {
				v = nil
			}
			es = append(es, history.Event{Index: int64(len(es)), Time: tm, Process: p, Type: types[int(op)%len(types)],
				F: fs[int(op>>2)%len(fs)], Key: []string{"a", "b"}[(who>>3)&1], Value: v})
		}
		checkAll(t, es, nil, fuzzModes[int(mode)%len(fuzzModes)])
	})
}
