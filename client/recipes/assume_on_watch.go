package recipes

// assume-on-watch takes a fired watch as the grant, without listing the
// queue again, where a fired watch never by itself means you hold the
// lock (docs/background.md#the-queue-lock-recipe). The predecessor may have left for another reason than
// the lock passing to us: it timed out, or its session expired while it
// was waiting, and the holder ahead of it still holds. Two holders follow.
func init() { registerZoo(bugs{name: "assume-on-watch", assumeOnWatch: true}) }
