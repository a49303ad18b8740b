package models

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// slowQuery is the duration above which a statement is logged.
const slowQuery = 500 * time.Millisecond

// gormLogger routes gorm's messages to slog at warn level. It never logs SQL
// arguments (they hold message text and password hashes): ParamsFilter drops
// them before gorm renders the statement.
type gormLogger struct{ log *slog.Logger }

func newGormLogger(log *slog.Logger) *gormLogger { return &gormLogger{log: log} }

func (l *gormLogger) LogMode(logger.LogLevel) logger.Interface { return l }

func (l *gormLogger) Info(context.Context, string, ...any) {}

func (l *gormLogger) Warn(ctx context.Context, msg string, _ ...any) {
	l.log.WarnContext(ctx, "gorm: "+msg)
}

func (l *gormLogger) Error(ctx context.Context, msg string, _ ...any) {
	l.log.WarnContext(ctx, "gorm: "+msg)
}

func (l *gormLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	elapsed := time.Since(begin)
	switch {
	case err != nil && !errors.Is(err, gorm.ErrRecordNotFound) && !errors.Is(err, context.Canceled):
		sql, _ := fc()
		l.log.WarnContext(ctx, "sql error", "err", err, "sql", unexplain(sql), "elapsed", elapsed)
	case elapsed > slowQuery:
		sql, rows := fc()
		l.log.WarnContext(ctx, "slow sql", "sql", unexplain(sql), "rows", rows, "elapsed", elapsed)
	}
}

// explainedPlaceholder is what gorm's explainer leaves of a PostgreSQL $n
// placeholder when it has no argument to put there.
var explainedPlaceholder = regexp.MustCompile(`\$(\d+)\$`)

func unexplain(sql string) string { return explainedPlaceholder.ReplaceAllString(sql, "$$$1") }

// ParamsFilter keeps the statement's placeholders and drops its arguments.
func (l *gormLogger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}
