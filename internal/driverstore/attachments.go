package driverstore

import (
	"context"
	"errors"
	"fmt"

	"harness/internal/llm"
	"harness/internal/models"
)

var _ llm.AttachmentReader = Store{}

// ReadAttachment implements llm.AttachmentReader: a session's stored image
// for the model requests (driver.Options.Attachments).
func (d Store) ReadAttachment(ctx context.Context, sessionID, id string) (llm.Attachment, error) {
	a, err := d.S.AttachmentData(ctx, sessionID, id)
	if errors.Is(err, models.ErrNotFound) {
		return llm.Attachment{}, fmt.Errorf("%w: %w", llm.ErrAttachmentNotFound, err)
	}
	if err != nil {
		return llm.Attachment{}, err
	}
	return llm.Attachment{MediaType: a.MediaType, Data: a.Data}, nil
}
