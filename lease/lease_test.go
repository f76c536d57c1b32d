package lease

import (
	"context"
	"errors"
	"testing"
	"time"
)

// rounds runs l (Poll an hour: a round that comes sooner was asked for)
// and returns a channel that receives each round's number.
func rounds(t *testing.T, l Loop, result func(n int) (int, error)) (<-chan int, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan int, 16)
	n := 0
	l.Poll = time.Hour
	l.RunDue = func(context.Context) (int, error) {
		n++
		ch <- n
		return result(n)
	}
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil once ctx ends", err)
		}
	})
	return ch, cancel
}

func next(t *testing.T, ch <-chan int, want int) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("round %d, want %d", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("round %d never came", want)
	}
}

func none(t *testing.T, ch <-chan int) {
	t.Helper()
	select {
	case got := <-ch:
		t.Fatalf("round %d came unasked", got)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestLoopSleepsUntilNextDue(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	dues := 0
	ch, _ := rounds(t, Loop{Now: func() time.Time { return now },
		NextDue: func(context.Context) (time.Time, bool, error) {
			dues++
			return now, dues < 3, nil // due now twice, then nothing
		}}, func(int) (int, error) { return 1, nil })
	next(t, ch, 1)
	next(t, ch, 2)
	next(t, ch, 3)
	none(t, ch) // nothing due: it sleeps the hour
}

func TestLoopWakes(t *testing.T) {
	wake := make(chan struct{})
	ch, _ := rounds(t, Loop{Wake: wake}, func(int) (int, error) { return 0, nil })
	next(t, ch, 1)
	none(t, ch)
	wake <- struct{}{}
	next(t, ch, 2)
}

func TestLoopAgainWhileWorkIsDone(t *testing.T) {
	ch, _ := rounds(t, Loop{Again: true}, func(n int) (int, error) {
		if n < 3 {
			return 5, nil
		}
		return 0, nil
	})
	next(t, ch, 1)
	next(t, ch, 2)
	next(t, ch, 3)
	none(t, ch)
}

func TestLoopWaitsPollAfterAFailure(t *testing.T) {
	now := time.Now()
	ch, _ := rounds(t, Loop{Again: true, Now: func() time.Time { return now },
		NextDue: func(context.Context) (time.Time, bool, error) { return now, true, nil }},
		func(int) (int, error) { return 3, errors.New("store down") })
	next(t, ch, 1)
	none(t, ch) // neither Again nor NextDue after a failure
}
