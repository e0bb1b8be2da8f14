package register

import (
	"fmt"
	"strings"
	"testing"
)

// line is entry seq of a log where write i, token i, writes i.
func line(seq int64) string {
	prevTok := seq - 1
	if seq == 1 {
		prevTok = NoToken
	}
	return fmt.Sprintf(`{"seq":%d,"wall":1,"op":"write","key":"k","token":%d,"has_token":true,"value":%d,"process":0,"accepted":true,"prev_value":%d,"prev_token":%d,"prev_fence":%d,"mode":"on"}`,
		seq, seq, seq, seq-1, prevTok, prevTok)
}

func TestReadApplyLogFrom(t *testing.T) {
	good := line(1) + "\n" + line(2) + "\n" + line(3) + "\n"
	cases := []struct {
		name    string
		in      string
		n       int
		errLine string // "" means no error expected
	}{
		{"empty", "", 0, ""},
		{"complete", good, 3, ""},
		{"torn last line dropped", good + `{"seq":4,"wall":1,"op":"wr`, 3, ""},
		{"torn last line of one byte", good + `{`, 3, ""},
		{"unterminated but whole last line kept", good + line(4), 4, ""},
		{"garbage middle line", line(1) + "\nxyz\n" + line(2) + "\n", 0, "line 2"},
		{"garbage terminated last line", good + "xyz\n", 0, "line 4"},
		{"blank line", line(1) + "\n\n" + line(2) + "\n", 0, "line 2"},
		{"seq gap", line(1) + "\n" + line(2) + "\n" + line(4) + "\n", 0, "line 3"},
		{"seq not from 1", line(2) + "\n", 0, "line 1"},
		{"seq repeated", line(1) + "\n" + line(1) + "\n", 0, "line 2"},
		{"gap on unterminated last line", good + line(5), 0, "line 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entries, err := ReadApplyLogFrom(strings.NewReader(tc.in))
			if tc.errLine != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errLine+":") {
					t.Fatalf("err %v, want one naming %s", err, tc.errLine)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != tc.n {
				t.Fatalf("%d entries, want %d", len(entries), tc.n)
			}
			for i, e := range entries {
				if e.Seq != int64(i+1) || e.Key != "k" || !e.Accepted {
					t.Fatalf("entry %d: %+v", i, e)
				}
			}
		})
	}
}

func TestReadApplyLogMissingFile(t *testing.T) {
	if _, err := ReadApplyLog("/nonexistent/apply.log"); err == nil {
		t.Fatal("no error for a missing file")
	}
}

func TestReplayChecksPrevState(t *testing.T) {
	entries, err := ReadApplyLogFrom(strings.NewReader(line(1) + "\n" + line(2) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := Replay(entries)
	if err != nil {
		t.Fatal(err)
	}
	if got := st["k"]; got != (KeyState{Value: 2, Token: 2, Fence: 2}) {
		t.Fatalf("state %+v", got)
	}
	entries[1].PrevValue = 7
	if _, err := Replay(entries); err == nil || !strings.Contains(err.Error(), "seq 2") {
		t.Fatalf("tampered log: err %v", err)
	}
	entries[1].PrevValue = 1
	entries[1].Op = "delete"
	if _, err := Replay(entries); err == nil {
		t.Fatal("unknown op accepted")
	}
}
