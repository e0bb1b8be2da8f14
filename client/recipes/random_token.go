package recipes

// random-token fences with a random value, as one would with a UUID (a
// classic mistake: docs/background.md#why-a-lock-needs-a-fence). It
// identifies a grant but says nothing about which grant is newer, so the register's fence admits a
// stale holder whose number happens to be larger and turns away a current
// holder whose number is smaller. The token-order checker sees tokens of
// successive grants go down.
func init() { registerZoo(bugs{name: "random-token", token: tokenRandom}) }
