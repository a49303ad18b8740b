// Package deps pins the modules the project is adopting while packages that
// import them are being written; it is deleted once every module has a real importer.
package deps

import (
	_ "github.com/a-h/templ"
	_ "github.com/alecthomas/chroma/v2"
	_ "github.com/chromedp/chromedp"
	_ "github.com/coder/websocket"
	_ "github.com/google/uuid"
	_ "github.com/labstack/echo/v4"
	_ "github.com/microcosm-cc/bluemonday"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/sashabaranov/go-openai"
	_ "github.com/yuin/goldmark"
	_ "golang.org/x/crypto/bcrypt"
	_ "gorm.io/driver/postgres"
	_ "gorm.io/driver/sqlite"
	_ "gorm.io/gorm"
)
