package webpushtest

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/relaybell/relaybell/webpush"
)

// Browser is a push subscription as a browser holds it: a P-256 key pair,
// a 16-byte auth secret and an endpoint on the fake push service.
type Browser struct {
	ID       string
	Endpoint string
	// ApplicationServerKey is the VAPID public key the browser subscribed
	// with; pushes signed by another key are refused with 403.
	ApplicationServerKey string

	h         *Handler
	private   *ecdh.PrivateKey
	auth      []byte
	serverKey []byte // ApplicationServerKey decoded

	// Guarded by h.mu.
	behavior Behavior
	forced   int // answers given with behavior.Status so far
	window   int // the handler's window that last counted this browser
}

// Behavior sets how the push service answers valid pushes for a browser.
// The zero Behavior accepts every push at once with 201.
type Behavior struct {
	// Status answers valid pushes instead of 201 (e.g. 404, 410, 413, 429,
	// 500, 503). Zero means 201.
	Status int
	// RetryAfter is sent as the Retry-After header with Status, e.g. "120"
	// or an HTTP date.
	RetryAfter string
	// Times limits Status to the first Times pushes after SetBehavior;
	// later pushes get 201. Zero means every push.
	Times int
	// Delay holds every answer for this long.
	Delay time.Duration
}

// NewBrowser subscribes a new browser with applicationServerKey (the VAPID
// public key in base64, as given to pushManager.subscribe). Its endpoint is
// <origin>/push/<random id>. It panics if the key is not a P-256 point.
func (h *Handler) NewBrowser(applicationServerKey string) *Browser {
	serverKey, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(applicationServerKey, "="))
	if err == nil {
		_, err = ecdh.P256().NewPublicKey(serverKey)
	}
	if err != nil {
		panic(fmt.Sprintf("webpushtest: applicationServerKey %q: %v", applicationServerKey, err))
	}
	private, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		panic("webpushtest: generating browser key: " + err.Error())
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	return h.addBrowser(private, auth, serverKey, applicationServerKey)
}

func (h *Handler) addBrowser(private *ecdh.PrivateKey, auth, serverKey []byte, applicationServerKey string) *Browser {
	id := randomID()
	b := &Browser{
		ID:                   id,
		Endpoint:             h.origin + "/push/" + id,
		ApplicationServerKey: applicationServerKey,
		h:                    h,
		private:              private,
		auth:                 auth,
		serverKey:            serverKey,
	}
	h.mu.Lock()
	h.browsers[id] = b
	h.mu.Unlock()
	return b
}

// Subscription returns what the browser's PushSubscription.toJSON() hands
// to the website: the endpoint and the keys in base64url without padding.
func (b *Browser) Subscription() webpush.Subscription {
	return webpush.Subscription{
		Endpoint: b.Endpoint,
		P256dh:   base64.RawURLEncoding.EncodeToString(b.private.PublicKey().Bytes()),
		Auth:     base64.RawURLEncoding.EncodeToString(b.auth),
	}
}

// Decrypt opens an aes128gcm push message body addressed to this browser.
func (b *Browser) Decrypt(body []byte) ([]byte, error) {
	return decrypt(body, b.private, b.auth)
}

// SetBehavior changes how pushes to this browser are answered from now on.
func (b *Browser) SetBehavior(bh Behavior) {
	b.h.mu.Lock()
	defer b.h.mu.Unlock()
	b.behavior = bh
	b.forced = 0
}

// nextAnswer returns the status, Retry-After and delay for the next valid
// push. Call with h.mu held.
func (b *Browser) nextAnswer() (status int, retryAfter string, delay time.Duration) {
	bh := b.behavior
	if bh.Status != 0 && bh.Status != http.StatusCreated && (bh.Times == 0 || b.forced < bh.Times) {
		b.forced++
		return bh.Status, bh.RetryAfter, bh.Delay
	}
	return http.StatusCreated, "", bh.Delay
}

// Received returns the messages accepted for this browser, oldest first.
func (b *Browser) Received() []Delivery { return b.h.Received(b.ID) }

// Unsubscribe forgets the browser: later pushes to its endpoint get 404,
// as a real push service answers for an expired subscription.
func (b *Browser) Unsubscribe() {
	b.h.mu.Lock()
	defer b.h.mu.Unlock()
	delete(b.h.browsers, b.ID)
}
