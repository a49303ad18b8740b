package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"harness/internal/service"
)

// bindJSON decodes the JSON body into v. An empty body leaves v as is when
// optional; unknown fields are refused, so a typo is not silently ignored.
func bindJSON(c echo.Context, v any, optional bool) error {
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		if dec.More() {
			return service.NewError(service.CodeBadRequest, "trailing data after the JSON body")
		}
		return nil
	case errors.Is(err, io.EOF) && optional:
		return nil
	case errors.Is(err, io.EOF):
		return service.NewError(service.CodeBadRequest, "a JSON body is required")
	case errors.As(err, &mbe):
		return tooLarge(mbe.Limit)
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return service.NewError(service.CodeBadRequest, "invalid JSON at byte "+strconv.FormatInt(se.Offset, 10))
	case errors.As(err, &te):
		return service.NewError(service.CodeBadRequest, fmt.Sprintf("field %q must be %s", te.Field, te.Type))
	}
	return service.NewError(service.CodeBadRequest, "invalid JSON body: "+err.Error())
}

// writeJSON writes v without HTML escaping, so stored event bytes pass
// through unchanged.
func writeJSON(c echo.Context, status int, v any) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	h.Set("Cache-Control", "no-store")
	c.Response().WriteHeader(status)
	enc := json.NewEncoder(c.Response())
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// queryInt64 reads an optional integer query parameter.
func queryInt64(c echo.Context, name string, def int64) (int64, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, service.NewError(service.CodeBadRequest, name+" must be an integer")
	}
	return n, nil
}
