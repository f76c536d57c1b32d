package sqlstore

import (
	"context"
	"fmt"

	"github.com/relaybell/relaybell/store"
)

var _ store.Uploads = (*Store)(nil)

// CreateUpload stores an upload and its files in one transaction.
func (s *Store) CreateUpload(ctx context.Context, u store.Upload) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if _, err := tx.Exec(ctx, `INSERT INTO uploads (id, website_id, type, width, height, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, u.ID, u.WebsiteID, u.Type, u.Width, u.Height, s.now(u.CreatedAt)); err != nil {
			return err
		}
		for name, f := range u.Files {
			if _, err := tx.Exec(ctx, `INSERT INTO upload_files (upload_id, name, content_type, data)
				VALUES ($1, $2, $3, $4)`, u.ID, name, f.Type, f.Data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("creating upload: %w", s.mapErr(err))
	}
	return nil
}

// Upload finds one of the website's uploads, without its files.
func (s *Store) Upload(ctx context.Context, websiteID, id string) (store.Upload, error) {
	var u store.Upload
	err := s.db.Read().QueryRow(ctx, `SELECT id, website_id, type, width, height, created_at FROM uploads
		WHERE website_id = $1 AND id = $2`, websiteID, id).
		Scan(&u.ID, &u.WebsiteID, &u.Type, &u.Width, &u.Height, timeDest{&u.CreatedAt})
	if err != nil {
		return store.Upload{}, fmt.Errorf("loading upload: %w", s.mapErr(err))
	}
	return u, nil
}

// UploadFile reads one file of an upload.
func (s *Store) UploadFile(ctx context.Context, id, name string) (store.UploadFile, error) {
	var f store.UploadFile
	err := s.db.Read().QueryRow(ctx, `SELECT content_type, data FROM upload_files WHERE upload_id = $1 AND name = $2`,
		id, name).Scan(&f.Type, &f.Data)
	if err != nil {
		return store.UploadFile{}, fmt.Errorf("loading upload file: %w", s.mapErr(err))
	}
	return f, nil
}

// DeleteUpload removes one of the website's uploads; its files go with it.
func (s *Store) DeleteUpload(ctx context.Context, websiteID, id string) error {
	if err := affected(s.db.Write().Exec(ctx, `DELETE FROM uploads WHERE website_id = $1 AND id = $2`, websiteID, id)); err != nil {
		return fmt.Errorf("deleting upload: %w", s.mapErr(err))
	}
	return nil
}
