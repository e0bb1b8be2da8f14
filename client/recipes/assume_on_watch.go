package recipes

// assume-on-watch takes a fired watch as the grant, without listing the
// queue again (seed 000 section 6: never assume you hold the lock because
// a watch fired). The predecessor may have left for another reason than
// the lock passing to us: it timed out, or its session expired while it
// was waiting, and the holder ahead of it still holds. Two holders follow.
func init() { registerZoo(bugs{name: "assume-on-watch", assumeOnWatch: true}) }
