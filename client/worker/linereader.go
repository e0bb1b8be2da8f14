package worker

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// lineReader splits a worker's stdout into lines without ever holding
// more than max bytes of one: a longer line is read to its end and
// dropped, and only its length is reported. bufio.Reader.ReadBytes would
// grow with the line, so a worker writing a gigabyte without a newline
// would cost the controller a gigabyte.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 16<<10), max: max}
}

// next returns the next line without its newline and surrounding space,
// or, for a line over max bytes, nil and the line's length. err is set at
// the end of the stream (a last line without newline is still returned).
func (l *lineReader) next() (line []byte, over int64, err error) {
	l.buf = l.buf[:0]
	var n int64
	for {
		chunk, rerr := l.r.ReadSlice('\n')
		n += int64(len(chunk))
		if over == 0 && len(l.buf)+len(chunk) > l.max+1 { // +1: the newline
			over = 1
			l.buf = l.buf[:0]
		}
		if over == 0 {
			l.buf = append(l.buf, chunk...)
		}
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue
		}
		if over > 0 {
			return nil, n, rerr
		}
		return bytes.TrimSpace(l.buf), 0, rerr
	}
}
