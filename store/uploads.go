package store

import (
	"context"
	"time"
)

// Upload is an image a website uploaded (issue 36, item 4), as the files
// the service serves: never the uploaded bytes themselves, only what
// package uploads re-encoded of them.
type Upload struct {
	ID        string
	WebsiteID string
	// Type is what the uploaded bytes were (image/png, image/jpeg,
	// image/webp or image/gif); Width and Height their size.
	Type          string
	Width, Height int
	CreatedAt     time.Time
	// Files by name (UploadFull, UploadIcon, UploadImage). Uploads lists
	// none; UploadFile reads one.
	Files map[string]UploadFile
}

// The files of an upload.
const (
	UploadFull  = "full"
	UploadIcon  = "icon"
	UploadImage = "image"
)

// UploadFile is one served file of an upload: its content type and bytes.
type UploadFile struct {
	Type string
	Data []byte
}

// Uploads holds uploaded images where every API node reads them: in the
// metadata store (bytea on PostgreSQL; a BLOB of the SQLite file under the
// data directory in the embedded mode).
type Uploads interface {
	// CreateUpload stores an upload with its files. ErrNotFound for an
	// unknown website.
	CreateUpload(ctx context.Context, u Upload) error
	// Upload finds one of the website's uploads, without its files.
	// ErrNotFound for another website's or an unknown id.
	Upload(ctx context.Context, websiteID, id string) (Upload, error)
	// UploadFile reads one file of an upload by the upload's id alone
	// (the files are served without credentials). ErrNotFound for an
	// unknown id or file name.
	UploadFile(ctx context.Context, id, name string) (UploadFile, error)
	// DeleteUpload removes one of the website's uploads with its files.
	// ErrNotFound for another website's or an unknown id.
	DeleteUpload(ctx context.Context, websiteID, id string) error
}
