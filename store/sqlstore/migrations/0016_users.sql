-- Version 16: people who sign in (store.Users). A user belongs to accounts
-- through members, with a role; a session is a signed-in browser, kept as
-- the SHA-256 of its token; user_tokens are the single-use tokens mailed
-- for e-mail verification and password reset, also kept hashed; invites
-- wait for the invited address to be verified. A session without a user
-- is a sign-up for an address already taken: it looks like a new,
-- unverified person's session (its email and name) and can do nothing, so
-- that signing up never tells whether an address is registered.
CREATE TABLE users (
	id             TEXT PRIMARY KEY,
	email          TEXT NOT NULL UNIQUE,
	name           TEXT NOT NULL DEFAULT '',
	password_hash  TEXT NOT NULL,
	email_verified {{.Bool}} NOT NULL DEFAULT {{.False}},
	created_at     {{.Time}} NOT NULL
){{.WithoutRowid}};

CREATE TABLE members (
	account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	role       TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'viewer')),
	created_at {{.Time}} NOT NULL,
	PRIMARY KEY (account_id, user_id)
){{.WithoutRowid}};

CREATE INDEX members_user ON members (user_id);

CREATE TABLE invites (
	account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	email      TEXT NOT NULL,
	role       TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'viewer')),
	created_at {{.Time}} NOT NULL,
	PRIMARY KEY (account_id, email)
){{.WithoutRowid}};

CREATE INDEX invites_email ON invites (email);

CREATE TABLE sessions (
	id           TEXT PRIMARY KEY,
	user_id      TEXT REFERENCES users (id) ON DELETE CASCADE,
	hash         TEXT NOT NULL UNIQUE,
	email        TEXT NOT NULL DEFAULT '',
	name         TEXT NOT NULL DEFAULT '',
	user_agent   TEXT NOT NULL DEFAULT '',
	ip           TEXT NOT NULL DEFAULT '',
	created_at   {{.Time}} NOT NULL,
	last_seen_at {{.Time}} NOT NULL,
	expires_at   {{.Time}} NOT NULL
){{.WithoutRowid}};

CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE user_tokens (
	hash       TEXT PRIMARY KEY,
	user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	kind       TEXT NOT NULL,
	email      TEXT NOT NULL,
	created_at {{.Time}} NOT NULL,
	expires_at {{.Time}} NOT NULL
){{.WithoutRowid}};

CREATE INDEX user_tokens_user ON user_tokens (user_id);
