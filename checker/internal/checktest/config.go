package checktest

import "github.com/zkchaos/zkchaos/history"

// ConfigV is a config workload value: a version and its data's digest.
func ConfigV(version int64, digest string) *history.Value {
	return &history.Value{Version: history.Int64(version), Digest: digest}
}

// Update is an admin's compare-and-set of key to value n, based on
// version expected, invoked at from and completed at to (ms). An ok
// carries the new version and digest; fail and info carry none.
func (b *Timeline) Update(from, to int64, p int, typ history.Type, key string, n, expected, version int64, digest string) *Timeline {
	b.Add(from, p, history.Invoke, history.FUpdate, key, &history.Value{N: history.Int64(n), Expected: history.Int64(expected)}, "")
	var v *history.Value
	errText := ""
	switch typ {
	case history.OK:
		v = ConfigV(version, digest)
	case history.Fail:
		errText = "bad version"
	case history.Info:
		errText = "timeout"
	}
	return b.Add(to, p, typ, history.FUpdate, key, v, errText)
}

// Watch is a client's watch of key, answered ok at to (ms) with the
// first version it applied.
func (b *Timeline) Watch(from, to int64, p int, key string, version int64, digest string) *Timeline {
	b.Add(from, p, history.Invoke, history.FWatch, key, nil, "")
	return b.Add(to, p, history.OK, history.FWatch, key, ConfigV(version, digest), "")
}

// Applied is a client's report, at ms, that it applied a version of key.
func (b *Timeline) Applied(ms int64, p int, key string, version int64, digest string) *Timeline {
	b.Add(ms, p, history.Invoke, history.FApplied, key, ConfigV(version, digest), "")
	return b.Add(ms, p, history.OK, history.FApplied, key, ConfigV(version, digest), "")
}
