// Package jsonl reads the JSON-lines files a run writes as it goes (the
// history, the runbook monitor's and the soak's samples), and writes the
// sample files, with the one rule of damage they share: a process killed mid-write leaves at most its last line
// cut off, so only that line may be dropped; damage anywhere else means
// the file cannot be trusted and is an error naming the line.
package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Each calls decode on every non-blank line of r, in order, with its
// number (from 1) and without its newline. A last line without its
// newline that decode refuses is a write cut short: it is dropped and
// truncated is true. Any other error of decode stops the read and is
// returned as "line N: …".
func Each(r io.Reader, decode func(line []byte, n int) error) (truncated bool, err error) {
	br := bufio.NewReaderSize(r, 256<<10)
	for n := 1; ; n++ {
		b, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return false, fmt.Errorf("read line %d: %w", n, rerr)
		}
		last := rerr != nil // io.EOF: no newline after this line
		if b = bytes.TrimSpace(b); len(b) > 0 {
			if derr := decode(b, n); derr != nil {
				if last {
					return true, nil
				}
				return false, fmt.Errorf("line %d: %w", n, derr)
			}
		}
		if last {
			return false, nil
		}
	}
}
