package api

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/uploads"
)

// Codes of POST /upload that section 7 leaves to the service.
const (
	// CodeNotAnImage: the bytes are not a PNG, JPEG, WebP or GIF that
	// decodes, whatever type was declared.
	CodeNotAnImage = "not_an_image"
	// CodeImageTooLarge: the image's header declares more pixels than
	// uploads.MaxPixels.
	CodeImageTooLarge = "image_too_large"
	// CodeFileRequired: a multipart/form-data body without a file field.
	CodeFileRequired = "file_required"
)

// Spec 8.1: POST /upload takes 60 requests an hour per IP address.
const uploadsPerHour = 60

// uploadCache is how long browsers and caches may keep a served file: its
// bytes never change under its URL (a new upload has a new id).
const uploadCache = "public, max-age=31536000, immutable"

// uploadJSON is the answer of POST /upload.
type uploadJSON struct {
	ID     string          `json:"id"`
	URL    string          `json:"url"`
	Type   string          `json:"type"`
	Width  int             `json:"width"`
	Height int             `json:"height"`
	Sizes  uploadSizesJSON `json:"sizes"`
}

type uploadSizesJSON struct {
	Icon  string `json:"icon"`
	Image string `json:"image"`
}

// uploadURL is the stable address of one file of an upload.
func (a *API) uploadURL(r *request, id, name string) string {
	return a.publicURL(r) + "/api/v1/uploads/" + id + "/" + name
}

// handleUpload serves POST /api/v1/upload: the image as the raw body, or
// as the file field of a multipart/form-data body. The declared type is
// not trusted: the bytes say what the image is.
func (a *API) handleUpload(r *request) error {
	if err := a.takeShared(r, a.ipLimit(r, "upload", time.Hour, uploadsPerHour),
		"this address may upload %d images an hour"); err != nil {
		return err
	}
	body, err := uploadBody(r)
	if err != nil {
		return err
	}
	// At most decodeSlots images decode at once: each may need some 100 MB
	// (uploads.MaxPixels of RGBA and its scaled copies).
	select {
	case a.decodeSlots <- struct{}{}:
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
	res, err := uploads.Process(body)
	<-a.decodeSlots
	switch {
	case errors.Is(err, uploads.ErrNotImage):
		return errorf(CodeNotAnImage, "the body is not a PNG, JPEG, WebP or GIF image")
	case errors.Is(err, uploads.ErrTooLarge):
		return errorf(CodeImageTooLarge, "the image has more than %d pixels", uploads.MaxPixels)
	case err != nil:
		return err
	}
	u := store.Upload{ID: uuid.NewString(), WebsiteID: r.owner.Website.ID, Type: res.Type, Width: res.Width, Height: res.Height,
		CreatedAt: r.now.UTC().Truncate(time.Millisecond), Files: map[string]store.UploadFile{
			store.UploadFull:  {Type: res.Full.Type, Data: res.Full.Data},
			store.UploadIcon:  {Type: res.Icon.Type, Data: res.Icon.Data},
			store.UploadImage: {Type: res.Image.Type, Data: res.Image.Data},
		}}
	if err := a.st.CreateUpload(r.ctx, u); err != nil {
		return err
	}
	return r.json(http.StatusCreated, uploadJSON{ID: u.ID, URL: a.uploadURL(r, u.ID, store.UploadFull), Type: u.Type,
		Width: u.Width, Height: u.Height, Sizes: uploadSizesJSON{
			Icon: a.uploadURL(r, u.ID, store.UploadIcon), Image: a.uploadURL(r, u.ID, store.UploadImage)}})
}

// uploadBody is the image of a POST /upload: the file field of a
// multipart/form-data body, else the whole body.
func uploadBody(r *request) ([]byte, error) {
	body := r.fc.Request.Body()
	mt, params, err := mime.ParseMediaType(string(r.fc.Request.Header.ContentType()))
	if err != nil || mt != "multipart/form-data" {
		return body, nil
	}
	if params["boundary"] == "" {
		return nil, errorf(CodeFileRequired, "a multipart/form-data body needs a boundary and a file field")
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return nil, errorf(CodeFileRequired, "the multipart/form-data body has no file field")
		}
		if err != nil {
			return nil, errorf(CodeBadRequest, "the multipart/form-data body could not be read")
		}
		if p.FormName() != "file" {
			continue
		}
		// The body is within MaxBodyBytes, and so is the part.
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, errorf(CodeBadRequest, "the multipart/form-data body could not be read")
		}
		return data, nil
	}
}

// handleDeleteUpload serves DELETE /api/v1/upload/{id}: its files are no
// longer served, and a logo made of it is removed.
func (a *API) handleDeleteUpload(r *request) error {
	u, err := loadOwn(r, "id", a.st.Upload)
	if err != nil {
		return err
	}
	// The logo goes first: a kill between the two writes leaves an upload
	// the logo no longer names (deleted again on the retry), never a logo,
	// every send's default icon, naming a file that is gone.
	if l := r.owner.Website.Settings.Logo; l != nil && l.UploadID == u.ID {
		if _, err := a.st.UpdateWebsite(r.ctx, r.owner.Website.ID, func(w *store.Website) error {
			if w.Settings.Logo != nil && w.Settings.Logo.UploadID == u.ID {
				w.Settings.Logo = nil
			}
			return nil
		}); err != nil {
			return err
		}
		a.keys.purge()
	}
	if err := a.st.DeleteUpload(r.ctx, r.owner.Website.ID, u.ID); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	return r.json(http.StatusOK, okAnswer{OK: true})
}

// handleUploadFile serves GET /api/v1/uploads/{id}/{name}, without
// credentials (push services and browsers fetch icons and images): the
// stored file with its fixed content type, nosniff, and a year of cache.
func (a *API) handleUploadFile(r *request) error {
	id, name := r.param("id"), r.param("name")
	if !isUUID(id) || (name != store.UploadFull && name != store.UploadIcon && name != store.UploadImage) {
		return errCode(CodeNotFound)
	}
	f, err := a.st.UploadFile(r.ctx, id, name)
	if errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	h := &r.fc.Response.Header
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", uploadCache)
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("ETag", `"`+id+"-"+name+`"`)
	if etagMatches(r.fc.Request.Header.Peek("If-None-Match"), `"`+id+"-"+name+`"`) {
		r.fc.SetStatusCode(http.StatusNotModified)
		return nil
	}
	r.fc.SetStatusCode(http.StatusOK)
	r.fc.SetContentType(f.Type)
	r.fc.SetBody(f.Data)
	return nil
}

func (a *API) uploadRoutes(rt *router) {
	rt.add(&route{method: http.MethodPost, pattern: "/api/v1/upload", auth: authKey, scope: ScopeSend, handle: a.handleUpload})
	rt.add(&route{method: http.MethodDelete, pattern: "/api/v1/upload/{id}", auth: authKey, scope: ScopeSend, handle: a.handleDeleteUpload})
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/uploads/{id}/{name}", handle: a.handleUploadFile})
}
