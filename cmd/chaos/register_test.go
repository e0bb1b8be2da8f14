package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/resource/register"
)

// TestRegisterIdempotencyFlag: --idempotency takes on or off only, and the
// register started with off reports it (and runs the table that way).
func TestRegisterIdempotencyFlag(t *testing.T) {
	t.Setenv(register.SecretEnv, "s3cret")
	var stderr bytes.Buffer
	code := runRegister(context.Background(), []string{"--log", t.TempDir() + "/apply.log", "--idempotency", "maybe"}, io.Discard, &stderr)
	if code != 255 || !strings.Contains(stderr.String(), "--idempotency") {
		t.Fatalf("--idempotency maybe: exit %d, stderr %q", code, stderr.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- runRegister(ctx, []string{"--log", t.TempDir() + "/apply.log", "--idempotency", "off"}, pw, io.Discard)
		pw.Close()
	}()
	var announced struct {
		Listen string `json:"listen"`
	}
	line, err := bufio.NewReader(pr).ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &announced) != nil {
		t.Fatalf("announce %q: %v", line, err)
	}
	go io.Copy(io.Discard, pr)
	req, _ := http.NewRequest(http.MethodGet, "http://"+announced.Listen+"/healthz", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var h register.Health
	err = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if err != nil || h.Idempotency != register.IdempotencyOff || h.Mode != register.ModeOn {
		t.Fatalf("healthz %+v, %v", h, err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("register exit %d", code)
	}
}
