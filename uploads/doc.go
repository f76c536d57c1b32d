// Package uploads is what an uploaded image is and how it becomes the
// files the service serves (issue 36, item 4): it tells PNG, JPEG, WebP
// and GIF apart by their bytes (never by a declared type), proves an
// upload is an image by decoding it, and re-encodes it into the sizes push
// services prefer.
//
// # Bombs and metadata
//
// The pixel count is read from the image's header (image.DecodeConfig)
// and checked against MaxPixels BEFORE any pixel is decoded, so a small
// file that declares 50,000 x 50,000 pixels costs a header read, not 10 GB
// of memory. Nothing of the upload's bytes is ever served: every file is
// re-encoded from the decoded pixels by the standard encoders, which write
// no metadata, so EXIF (GPS position, camera serial numbers), XMP, ICC
// profiles and comments are gone.
//
// # Files
//
// Process makes three files of an upload (Files): the full image, at most
// MaxSide pixels on its longer side (JPEG for a JPEG upload, PNG for the
// others, whose transparency it keeps); the icon, 192x192 PNG; and the
// image, 1024x512 JPEG. The icon and the image are cropped to their aspect
// ratio around the centre, then scaled with Catmull-Rom (golang.org/x/image
// /draw), the scaler that keeps text and edges sharp when shrinking.
//
// The package never stores or serves anything: the API stores the files
// (store.Uploads, one table in the metadata store so that every node of a
// cluster reads them, and the embedded mode keeps them under its data
// directory) and serves them.
package uploads
