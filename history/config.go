package history

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// The config workload's data (docs/worker-protocol.md, "Config"), owned
// here because the history's Value.Digest means it: workers compute
// digests of what they write and read, and the checkers compute the
// digest of an update whose answer was lost from its value.

// ConfigDigest identifies config data: the first 16 hex digits of the
// SHA-256 of exactly the bytes written or read. A client's applied
// (version, digest) pair must be one an admin wrote.
func ConfigDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// ConfigData is the data an admin writes for value n: "n=<n>\n". The
// controller writes ConfigData(0) as version 0.
func ConfigData(n int64) []byte { return []byte("n=" + strconv.FormatInt(n, 10) + "\n") }

// ParseConfigData is the n of data written by ConfigData; ok is false for
// any other data.
func ParseConfigData(data []byte) (n int64, ok bool) {
	s, found := strings.CutPrefix(string(data), "n=")
	if !found {
		return 0, false
	}
	s, found = strings.CutSuffix(s, "\n")
	if !found {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
