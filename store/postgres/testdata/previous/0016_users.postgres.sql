-- Version 16: people who sign in (store.Users). A user belongs to accounts
-- through members, with a role; a session is a signed-in browser, kept as
-- the SHA-256 of its token; user_tokens are the single-use tokens mailed
-- for e-mail verification and password reset, also kept hashed; invites
-- wait for the invited address to be verified. A session without a user
-- is a sign-up for an address already taken: it looks like a new,
-- unverified person's session (its email and name) and can do nothing, so
-- that signing up never tells whether an address is registered. Times are
-- timestamptz, as everywhere on PostgreSQL.
CREATE TABLE users (
	id             text PRIMARY KEY,
	email          text NOT NULL UNIQUE,
	name           text NOT NULL DEFAULT '',
	password_hash  text NOT NULL,
	email_verified boolean NOT NULL DEFAULT false,
	created_at     timestamptz NOT NULL
);

CREATE TABLE members (
	account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	role       text NOT NULL CHECK (role IN ('owner', 'admin', 'viewer')),
	created_at timestamptz NOT NULL,
	PRIMARY KEY (account_id, user_id)
);

CREATE INDEX members_user ON members (user_id);

CREATE TABLE invites (
	account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	email      text NOT NULL,
	role       text NOT NULL CHECK (role IN ('owner', 'admin', 'viewer')),
	created_at timestamptz NOT NULL,
	PRIMARY KEY (account_id, email)
);

CREATE INDEX invites_email ON invites (email);

CREATE TABLE sessions (
	id           text PRIMARY KEY,
	user_id      text REFERENCES users (id) ON DELETE CASCADE,
	hash         text NOT NULL UNIQUE,
	email        text NOT NULL DEFAULT '',
	name         text NOT NULL DEFAULT '',
	user_agent   text NOT NULL DEFAULT '',
	ip           text NOT NULL DEFAULT '',
	created_at   timestamptz NOT NULL,
	last_seen_at timestamptz NOT NULL,
	expires_at   timestamptz NOT NULL
);

CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE user_tokens (
	hash       text PRIMARY KEY,
	user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	kind       text NOT NULL,
	email      text NOT NULL,
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL
);

CREATE INDEX user_tokens_user ON user_tokens (user_id);
