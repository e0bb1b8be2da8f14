package recipes

// clock-token fences with the local clock in seconds (time.Now().Unix()).
// Clocks of different machines disagree, and even on one machine every
// grant within the same second gets the same token, so the fence cannot
// tell a stale holder from the current one. The token-order checker sees
// successive grants that do not increase the token.
func init() { registerZoo(bugs{name: "clock-token", token: tokenClock}) }
