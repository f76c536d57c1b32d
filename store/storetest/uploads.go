package storetest

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var uploadCases = []testCase{
	{"CRUD", testUploadCRUD},
}

func testUploadCRUD(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	// Every byte value, so that neither engine may treat the data as text.
	data := make([]byte, 512)
	for i := range data {
		data[i] = byte(i)
	}
	u := store.Upload{ID: uuid.NewString(), WebsiteID: w.Website.ID, Type: "image/webp", Width: 640, Height: 480, CreatedAt: at(0),
		Files: map[string]store.UploadFile{
			store.UploadFull:  {Type: "image/png", Data: data},
			store.UploadIcon:  {Type: "image/png", Data: []byte{0x89, 'P', 0}},
			store.UploadImage: {Type: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff}},
		}}
	noErr(t, "CreateUpload", s.CreateUpload(ctx, u))
	wantErr(t, "CreateUpload again", s.CreateUpload(ctx, u), store.ErrConflict)
	bad := u
	bad.ID, bad.WebsiteID = uuid.NewString(), uuid.NewString()
	wantErr(t, "CreateUpload of an unknown website", s.CreateUpload(ctx, bad), store.ErrNotFound)

	got, err := s.Upload(ctx, w.Website.ID, u.ID)
	noErr(t, "Upload", err)
	want := u
	want.Files = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Upload = %+v, want %+v", got, want)
	}
	_, err = s.Upload(ctx, other.Website.ID, u.ID)
	wantErr(t, "Upload of another website", err, store.ErrNotFound)
	for name, f := range u.Files {
		got, err := s.UploadFile(ctx, u.ID, name)
		noErr(t, "UploadFile "+name, err)
		if got.Type != f.Type || !bytes.Equal(got.Data, f.Data) {
			t.Fatalf("UploadFile %s = %s %x, want %s %x", name, got.Type, got.Data, f.Type, f.Data)
		}
	}
	_, err = s.UploadFile(ctx, u.ID, "original")
	wantErr(t, "UploadFile of an unknown name", err, store.ErrNotFound)

	wantErr(t, "DeleteUpload of another website", s.DeleteUpload(ctx, other.Website.ID, u.ID), store.ErrNotFound)
	noErr(t, "DeleteUpload", s.DeleteUpload(ctx, w.Website.ID, u.ID))
	wantErr(t, "DeleteUpload again", s.DeleteUpload(ctx, w.Website.ID, u.ID), store.ErrNotFound)
	_, err = s.UploadFile(ctx, u.ID, store.UploadIcon)
	wantErr(t, "UploadFile after delete", err, store.ErrNotFound)
}
