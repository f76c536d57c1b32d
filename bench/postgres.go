package bench

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// dropSchema removes a cluster run's schema.
func dropSchema(dsn, schema string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
}
