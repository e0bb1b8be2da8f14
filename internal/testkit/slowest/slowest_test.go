package slowest

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const module = "example.com/m/"

// stream is a hand-made go test -json stream, in the shape go 1.26 writes
// it: package a passes (a test of 75 s, a skipped one), package b fails
// in a subtest while its sibling subtest and another test pass, package c
// does not build, package d has no test files.
const stream = `{"Action":"start","Package":"example.com/m/a"}
{"Action":"run","Package":"example.com/m/a","Test":"TestSlow"}
{"Action":"output","Package":"example.com/m/a","Test":"TestSlow","Output":"=== RUN   TestSlow\n"}
{"Action":"output","Package":"example.com/m/a","Test":"TestSlow","Output":"--- PASS: TestSlow (75.00s)\n"}
{"Action":"pass","Package":"example.com/m/a","Test":"TestSlow","Elapsed":75}
{"Action":"run","Package":"example.com/m/a","Test":"TestSkip"}
{"Action":"output","Package":"example.com/m/a","Test":"TestSkip","Output":"=== RUN   TestSkip\n"}
{"Action":"output","Package":"example.com/m/a","Test":"TestSkip","Output":"    a_test.go:4: no thing here\n"}
{"Action":"output","Package":"example.com/m/a","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.50s)\n"}
{"Action":"skip","Package":"example.com/m/a","Test":"TestSkip","Elapsed":0.5}
{"Action":"output","Package":"example.com/m/a","Output":"PASS\n"}
{"Action":"output","Package":"example.com/m/a","Output":"ok  \texample.com/m/a\t75.600s\n"}
{"Action":"pass","Package":"example.com/m/a","Elapsed":75.6}
{"Action":"start","Package":"example.com/m/b"}
{"Action":"run","Package":"example.com/m/b","Test":"TestParent"}
{"Action":"output","Package":"example.com/m/b","Test":"TestParent","Output":"=== RUN   TestParent\n"}
{"Action":"run","Package":"example.com/m/b","Test":"TestParent/ok"}
{"Action":"output","Package":"example.com/m/b","Test":"TestParent/ok","Output":"=== RUN   TestParent/ok\n"}
{"Action":"output","Package":"example.com/m/b","Test":"TestParent/ok","Output":"--- PASS: TestParent/ok (3.00s)\n"}
{"Action":"pass","Package":"example.com/m/b","Test":"TestParent/ok","Elapsed":3}
{"Action":"run","Package":"example.com/m/b","Test":"TestParent/bad"}
{"Action":"output","Package":"example.com/m/b","Test":"TestParent/bad","Output":"=== RUN   TestParent/bad\n"}
{"Action":"output","Package":"example.com/m/b","Test":"TestParent/bad","Output":"    b_test.go:5: boom\n"}
{"Action":"output","Package":"example.com/m/b","Test":"TestParent/bad","Output":"--- FAIL: TestParent/bad (1.00s)\n"}
{"Action":"fail","Package":"example.com/m/b","Test":"TestParent/bad","Elapsed":1}
{"Action":"output","Package":"example.com/m/b","Test":"TestParent","Output":"--- FAIL: TestParent (4.00s)\n"}
{"Action":"fail","Package":"example.com/m/b","Test":"TestParent","Elapsed":4}
{"Action":"run","Package":"example.com/m/b","Test":"TestFine"}
{"Action":"output","Package":"example.com/m/b","Test":"TestFine","Output":"=== RUN   TestFine\n"}
{"Action":"output","Package":"example.com/m/b","Test":"TestFine","Output":"    b_test.go:9: quiet\n"}
{"Action":"output","Package":"example.com/m/b","Test":"TestFine","Output":"--- PASS: TestFine (4.00s)\n"}
{"Action":"pass","Package":"example.com/m/b","Test":"TestFine","Elapsed":4}
{"Action":"output","Package":"example.com/m/b","Output":"FAIL\n"}
{"Action":"output","Package":"example.com/m/b","Output":"FAIL\texample.com/m/b\t8.100s\n"}
{"Action":"fail","Package":"example.com/m/b","Elapsed":8.1}
{"ImportPath":"example.com/m/c [example.com/m/c.test]","Action":"build-output","Output":"# example.com/m/c [example.com/m/c.test]\n"}
{"ImportPath":"example.com/m/c [example.com/m/c.test]","Action":"build-output","Output":"c/c_test.go:3:39: cannot use \"s\" as int value\n"}
{"ImportPath":"example.com/m/c [example.com/m/c.test]","Action":"build-fail"}
{"Action":"start","Package":"example.com/m/c"}
{"Action":"output","Package":"example.com/m/c","Output":"FAIL\texample.com/m/c [build failed]\n"}
{"Action":"fail","Package":"example.com/m/c","Elapsed":0,"FailedBuild":"example.com/m/c [example.com/m/c.test]"}
{"Action":"start","Package":"example.com/m/d"}
{"Action":"output","Package":"example.com/m/d","Output":"?   \texample.com/m/d\t[no test files]\n"}
{"Action":"skip","Package":"example.com/m/d","Elapsed":0}
`

// The stream's own packages, a and d, alone: nothing failed.
var passing = strings.Join(slices.DeleteFunc(strings.SplitAfter(stream, "\n"), func(l string) bool {
	return !strings.Contains(l, `"example.com/m/a`) && !strings.Contains(l, `"example.com/m/d`)
}), "")

// TestReadPrintsAsGoTest: a passing package shows its ok line only, a
// failing one the lines of its failing tests (not of the subtest and the
// test that passed), build errors are shown, skips are not.
func TestReadPrintsAsGoTest(t *testing.T) {
	var out strings.Builder
	if _, err := Read(strings.NewReader(stream), &out); err != nil {
		t.Fatal(err)
	}
	want := "ok  \texample.com/m/a\t75.600s\n" +
		"=== RUN   TestParent\n=== RUN   TestParent/bad\n    b_test.go:5: boom\n--- FAIL: TestParent/bad (1.00s)\n--- FAIL: TestParent (4.00s)\n" +
		"FAIL\nFAIL\texample.com/m/b\t8.100s\n" +
		"# example.com/m/c [example.com/m/c.test]\nc/c_test.go:3:39: cannot use \"s\" as int value\nFAIL\texample.com/m/c [build failed]\n" +
		"?   \texample.com/m/d\t[no test files]\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestReadRanks: packages that ran tests and top-level tests (a subtest's
// time is its parent's), slowest first; the failures in order.
func TestReadRanks(t *testing.T) {
	sum, err := Read(strings.NewReader(stream), &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	wantPkgs := []Timing{{"example.com/m/a", "", 75.6}, {"example.com/m/b", "", 8.1}}
	if !slices.Equal(sum.Packages, wantPkgs) {
		t.Errorf("packages %v, want %v", sum.Packages, wantPkgs)
	}
	wantTests := []Timing{{"example.com/m/a", "TestSlow", 75}, {"example.com/m/b", "TestFine", 4},
		{"example.com/m/b", "TestParent", 4}, {"example.com/m/a", "TestSkip", 0.5}}
	if !slices.Equal(sum.Tests, wantTests) {
		t.Errorf("tests %v, want %v", sum.Tests, wantTests)
	}
	if want := []string{"example.com/m/b", "example.com/m/c"}; !slices.Equal(sum.Failed, want) {
		t.Errorf("failed %v, want %v", sum.Failed, want)
	}
}

// TestRunExitStatus: 1 for a stream with a failing test or a failed
// build, for one cut inside a package (go test killed), 0 for a passing
// one; a line that is not JSON is shown and changes nothing.
func TestRunExitStatus(t *testing.T) {
	failingTest := strings.ReplaceAll(passing, "example.com/m/a", "example.com/m/x") + stream[strings.Index(stream, `{"Action":"start","Package":"example.com/m/b"}`):strings.Index(stream, `{"ImportPath"`)]
	buildOnly := passing + stream[strings.Index(stream, `{"ImportPath"`):strings.Index(stream, `{"Action":"start","Package":"example.com/m/d"}`)]
	cut := passing + stream[strings.Index(stream, `{"Action":"start","Package":"example.com/m/b"}`):strings.Index(stream, `{"Action":"output","Package":"example.com/m/b","Output":"FAIL\n"}`)]
	cases := []struct {
		name, stream string
		want         int
		shows        string
	}{
		{"passing", passing, 0, "ok  \texample.com/m/a"},
		{"passing with a line that is not JSON", "go: downloading example.com/x v1.0.0\n" + passing, 0, "go: downloading example.com/x"},
		{"a failing test", failingTest, 1, "--- FAIL: TestParent/bad"},
		{"a failed build", buildOnly, 1, "FAIL\texample.com/m/c [build failed]"},
		{"cut inside a package", cut, 1, "FAIL\texample.com/m/b: the stream ended before the package did"},
		{"empty", "", 0, "slowest packages (0 of 0)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if got := Run(strings.NewReader(tc.stream), &out, 10, module); got != tc.want {
				t.Errorf("exit %d, want %d:\n%s", got, tc.want, out.String())
			}
			if !strings.Contains(out.String(), tc.shows) {
				t.Errorf("output lacks %q:\n%s", tc.shows, out.String())
			}
		})
	}
}

// TestTables: the top n of each, names relative to the module, a test
// over LongTest marked and listed even beyond the top n, the failed
// packages last.
func TestTables(t *testing.T) {
	sum, err := Read(strings.NewReader(stream), &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := sum.WriteTables(&out, 1, module); err != nil {
		t.Fatal(err)
	}
	want := `
slowest packages (1 of 2):
    75.6 s  a
slowest tests (1 of 4; 1 over 60 s, marked *: each must say why in a comment):
    75.0 s  a TestSlow *
FAIL: b, c
`
	if out.String() != want {
		t.Errorf("tables:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	if err := sum.WriteTables(&out, 0, module); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "slowest tests (1 of 4; 1 over 60 s") || !strings.Contains(out.String(), "a TestSlow *") {
		t.Errorf("a test over %v s is not listed beyond the top 0:\n%s", LongTest, out.String())
	}
}

// TestTokenWaitsLeftOut: a test's time in the tables leaves out the waits
// for run tokens it and its subtests logged (WaitLog), so a test that
// stood 50 s in the queue is not marked as a slow test.
func TestTokenWaitsLeftOut(t *testing.T) {
	out := func(test, text string) string {
		return `{"Action":"output","Package":"example.com/m/e","Test":"` + test + `","Output":"    machine.go:73: ` + text + `\n"}` + "\n"
	}
	s := `{"Action":"start","Package":"example.com/m/e"}` + "\n" +
		out("TestQueued", WaitLog(50*time.Second, 1)) +
		out("TestQueued/sub", WaitLog(1500*time.Millisecond, 2)) +
		out("TestQueued", "waited 3s for the bus") +
		`{"Action":"pass","Package":"example.com/m/e","Test":"TestQueued","Elapsed":70}` + "\n" +
		`{"Action":"pass","Package":"example.com/m/e","Elapsed":70.1}` + "\n"
	sum, err := Read(strings.NewReader(s), &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Timing{{"example.com/m/e", "TestQueued", 18.5}}; !slices.Equal(sum.Tests, want) {
		t.Errorf("tests %v, want %v (70 s less 51.5 s of token waits)", sum.Tests, want)
	}
}

// TestTokenTimeSummed: the tokens' time held (HoldLog) is summed over the
// stream, tokens × time, and the tables give it with the floor it puts on
// the suite at that many tokens; a stream without holds says nothing of
// tokens.
func TestTokenTimeSummed(t *testing.T) {
	out := func(pkg, test, text string) string {
		return `{"Action":"output","Package":"` + pkg + `","Test":"` + test + `","Output":"    machine.go:90: ` + text + `\n"}` + "\n"
	}
	s := out("example.com/m/e", "TestOne", HoldLog(30*time.Second, 1)) +
		out("example.com/m/e", "TestTwo", HoldLog(20*time.Second, 2)) +
		out("example.com/m/f", "TestThree/sub", HoldLog(10*time.Second, 1)) +
		out("example.com/m/f", "TestThree", "held 3 locks for 9s")
	sum, err := Read(strings.NewReader(s), &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.TokenTime != 80*time.Second {
		t.Errorf("token time %v, want 80s (30 + 2×20 + 10)", sum.TokenTime)
	}
	wantHolders := []Timing{{"example.com/m/e", "TestTwo", 40}, {"example.com/m/e", "TestOne", 30}, {"example.com/m/f", "TestThree", 10}}
	if !slices.Equal(sum.Holders, wantHolders) {
		t.Errorf("holders %v, want %v (a subtest's hold is its parent's)", sum.Holders, wantHolders)
	}
	var b strings.Builder
	if err := sum.writeTables(&b, 10, module, 2); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"run tokens held 80 s in all: at 2 real runs at once, the suite takes at least 40 s\n",
		"largest run-token holders (3 of 3; tokens × seconds):\n    40.0 s  e TestTwo\n    30.0 s  e TestOne\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := (Summary{}).writeTables(&b, 10, module, 2); err != nil || strings.Contains(b.String(), "run tokens") {
		t.Errorf("a stream without holds: %v\n%s", err, b.String())
	}
}
