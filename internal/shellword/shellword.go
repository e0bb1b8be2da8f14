// Package shellword quotes the words of a command line the harness
// prints for a user to paste (chaos replay, chaos shrink, chaos run
// --schedule), so that it runs as printed in a POSIX shell.
package shellword

import "strings"

// Quote quotes s for a POSIX shell when it holds anything but the
// characters paths usually have; such a word is returned as it is.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:=,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join quotes each word and joins them with spaces.
func Join(words ...string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = Quote(w)
	}
	return strings.Join(out, " ")
}
