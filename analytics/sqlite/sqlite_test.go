package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/analytics/analyticstest"
)

func TestStore(t *testing.T) {
	analyticstest.Run(t, func(t *testing.T) analytics.Store {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), "analytics.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
