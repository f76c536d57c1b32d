package store

import (
	"context"
	"time"
)

// MaxTestDevices is how many test devices a website has at most.
const MaxTestDevices = 100

// TestDevice is a browser (an endpoint) a website's team marked to receive
// its test sends, with what identifies it to people.
type TestDevice struct {
	EndpointID   string
	Name         string
	SubscriberID string
	ExternalID   string // "" when the browser is linked to no user
	Device       string
	UserAgent    string
	CreatedAt    time.Time // when it became a test device
	LastSeenAt   time.Time // the browser's
}

// TestDevices holds each website's test devices. A send whose target is
// its test devices reaches them through AudienceQuery.TestDevices and
// nobody else.
type TestDevices interface {
	// AddTestDevice makes the website's endpoint a test device named name,
	// or renames it when it is one (created false). ErrNotFound when the
	// endpoint is not the website's; ErrConflict when the website has
	// MaxTestDevices already.
	AddTestDevice(ctx context.Context, websiteID, endpointID, name string, at time.Time) (d TestDevice, created bool, err error)
	// TestDevices lists the website's test devices, newest first.
	TestDevices(ctx context.Context, websiteID string) ([]TestDevice, error)
	// RemoveTestDevice makes the endpoint no test device; nil when it was
	// none.
	RemoveTestDevice(ctx context.Context, websiteID, endpointID string) error
}
