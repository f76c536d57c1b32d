package cputime

import (
	"testing"
	"time"
)

// Work on the processor shows in Process, as user time: spinning, it
// moves on (within ten seconds, however loaded the machine).
func TestProcessCountsWork(t *testing.T) {
	start := Process()
	user0, _ := Split()
	deadline := time.Now().Add(10 * time.Second)
	for Process()-start < 10*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("10 s spinning used %v of the processor", Process()-start)
		}
	}
	if user1, _ := Split(); user1 <= user0 {
		t.Fatalf("user time %v, then %v after spinning", user0, user1)
	}
}
