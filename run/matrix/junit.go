package matrix

import (
	"encoding/xml"
	"fmt"
	"os"
	"strings"
)

// JUnit XML, the subset CI systems read: one testsuite, one testcase per
// cell; a cell judged wrong is a failure, a harness error an error, an
// unknown verdict a failure too (CI must not pass what was not decided).
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes the results as JUnit XML to path, as the suite
// "zkchaos <command>" (test-all, gate), so a CI system that keeps both
// tells them apart. A failure's or error's message ends with what reruns
// the cell (Reproduction, with exe the chaos binary).
func WriteJUnit(path, command, exe string, rs []CellResult) error {
	s := junitSuite{Name: "zkchaos " + command, Tests: len(rs)}
	for _, r := range rs {
		tc := junitCase{Name: r.Name, Classname: "zkchaos." + r.Cell.Recipe}
		var out []string
		for _, a := range r.Attempts {
			tc.Time += a.Elapsed.Seconds()
			out = append(out, fmt.Sprintf("seed %d: %s, actual %s, first violation %s, run %s",
				a.Seed, outcomeString(a), actualString(r.Cell, a), firstOf(r.Cell, a), a.Dir))
		}
		s.Time += tc.Time
		msg := fmt.Sprintf("expected %s; %d/%d attempts as expected", r.Cell.ExpectString(), passes(r), len(r.Attempts))
		if f := firstsOf(r); f != "" && len(r.Attempts) > 0 {
			msg += fmt.Sprintf("; detected %d/%d, first violation after the first client op: %s", r.Detected, len(r.Attempts), f)
		}
		if m := missed(r); m != "" {
			msg += "; " + m
		}
		if rep := Reproduction(exe, r); rep != "" {
			msg += "; " + rep
		}
		body := strings.Join(out, "\n")
		switch r.Outcome {
		case Wrong, Unknown:
			s.Failures++
			tc.Failure = &junitMessage{Message: msg, Type: string(r.Outcome), Body: body}
		case Error:
			s.Errors++
			tc.Error = &junitMessage{Message: msg, Type: "harness", Body: body}
		case Skipped:
			s.Skipped++
			tc.Skipped = &junitMessage{Message: r.SkippedBecause}
		default:
			tc.SystemOut = body
		}
		s.Cases = append(s.Cases, tc)
	}
	return writeSuite(path, s)
}

// WriteBaselineJUnit writes a gate that stopped at its baseline as JUnit
// XML: one test case, the baseline, failed with the diagnosis, so a CI
// system that shows failed cases shows why no cell ran.
func WriteBaselineJUnit(path, command string, b Baseline) error {
	var out strings.Builder
	b.Write(&out)
	tc := junitCase{Name: b.Cell.Name(), Classname: "zkchaos." + b.Cell.Recipe, Time: b.Attempt.Elapsed.Seconds(),
		Failure: &junitMessage{Message: b.Diagnosis.Headline(), Type: string(Unknown), Body: out.String()}}
	if b.HarnessFailed() {
		tc.Failure, tc.Error = nil, &junitMessage{Message: "baseline run failed: " + b.Attempt.Detail, Type: "harness", Body: out.String()}
	}
	s := junitSuite{Name: "zkchaos " + command, Tests: 1, Time: tc.Time, Cases: []junitCase{tc}}
	if tc.Error != nil {
		s.Errors = 1
	} else {
		s.Failures = 1
	}
	return writeSuite(path, s)
}

func writeSuite(path string, s junitSuite) error {
	b, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode junit: %w", err)
	}
	if err := os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644); err != nil {
		return fmt.Errorf("write junit %s: %w", path, err)
	}
	return nil
}
