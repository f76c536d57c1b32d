// Package onsite is what a website shows on its own pages through the
// browser SDK (issue 36, parts 1, 2 and 5): the subscription prompt, the
// welcome notification a new browser gets, and on-site messages.
//
// It owns the three definitions and their validation (Prompt, Welcome,
// Message), the URL patterns they are targeted with (Pattern: `*` stands
// for any run of characters; matched against the page's path and query,
// or against the whole URL when the pattern names a scheme), the choice
// of the messages that apply to one page view (Applies), and WelcomeEngine,
// the handler of the welcome timers (store.TimerWelcome) that the
// automations' claim loop calls.
//
// # Welcome, exactly once
//
// A registration that stores a new endpoint stores, in the same
// transaction, a welcome timer due after the welcome's delay
// (store.SubscriptionInput.Welcome), unless the welcome ledger holds the
// endpoint's URL. The engine claims it under a lease like any timer, and
// store.Onsite.FireWelcome removes it, writes the ledger row keyed by the
// endpoint URL's hash and stores the send in one transaction: a node
// killed at any moment leaves the timer (claimed again once its lease runs
// out) or all of it, and an endpoint that re-subscribes never gets a
// second welcome. The send is a notification with welcome true, to that
// one browser (notification.Target.EndpointID, the timer's RunID), never
// its person's other browsers: fan-out reads that endpoint alone, in the
// shard it is in when the send starts, and one gone or unsubscribed by
// then gets nothing.
//
// # What it must never do
//
// Put markup from the settings on a page (the SDK renders text only,
// in a shadow root); send a welcome twice to one endpoint, or to any
// other browser than the one that subscribed; start a goroutine of its
// own.
package onsite
