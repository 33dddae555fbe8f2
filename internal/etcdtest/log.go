package etcdtest

import (
	"strings"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logBuffer keeps the last warnings and errors of a cluster's members and
// clients, to be shown only when the test fails.
type logBuffer struct {
	mu    sync.Mutex
	max   int
	lines []string
	size  int
	lost  int
}

func newLogBuffer(max int) *logBuffer { return &logBuffer{max: max} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, string(p))
	b.size += len(p)
	for b.size > b.max && len(b.lines) > 1 {
		b.size -= len(b.lines[0])
		b.lines = b.lines[1:]
		b.lost++
	}
	return len(p), nil
}

func (b *logBuffer) Sync() error { return nil }

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s strings.Builder
	if b.lost > 0 {
		s.WriteString("[earlier lines dropped]\n")
	}
	for _, l := range b.lines {
		s.WriteString(l)
	}
	return s.String()
}

// logger writes warnings and errors into the buffer.
func (b *logBuffer) logger() *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(b), zapcore.WarnLevel)
	return zap.New(core)
}
