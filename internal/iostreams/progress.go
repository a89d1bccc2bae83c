package iostreams

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress is an indicator drawn on stderr. It draws nothing unless stderr is a terminal,
// so callers may always use it. Safe for concurrent use.
type Progress struct {
	w       io.Writer
	enabled bool
	label   string

	mu          sync.Mutex
	done, total int64
	stopped     bool
	stop        chan struct{}
	wg          sync.WaitGroup
	lastLen     int
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// StartProgress starts an indicator labelled label. Call Set to report how far along the
// work is (total 0 means unknown: a spinner and a count) and Stop when done.
func (s *IOStreams) StartProgress(label string) *Progress {
	p := &Progress{w: s.ErrOut, enabled: s.IsStderrTTY(), label: label, stop: make(chan struct{})}
	if !p.enabled {
		return p
	}
	p.wg.Add(1)
	go p.loop()
	return p
}

// Set records progress: done units out of total (0 when unknown).
func (p *Progress) Set(done, total int64) {
	p.mu.Lock()
	p.done, p.total = done, total
	p.mu.Unlock()
}

// Add adds n units of progress.
func (p *Progress) Add(n int64) {
	p.mu.Lock()
	p.done += n
	p.mu.Unlock()
}

// SetLabel changes the label.
func (p *Progress) SetLabel(label string) {
	p.mu.Lock()
	p.label = label
	p.mu.Unlock()
}

// Stop erases the indicator. It may be called more than once.
func (p *Progress) Stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	p.mu.Unlock()
	if !p.enabled {
		return
	}
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.lastLen))
	p.mu.Unlock()
}

func (p *Progress) loop() {
	defer p.wg.Done()
	t := time.NewTicker(120 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		p.draw(spinnerFrames[i%len(spinnerFrames)])
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

func (p *Progress) draw(frame string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var line string
	switch {
	case p.total > 0:
		const width = 30
		frac := float64(p.done) / float64(p.total)
		if frac > 1 {
			frac = 1
		}
		n := int(frac * width)
		line = fmt.Sprintf("%s [%s%s] %d/%d %3.0f%%", p.label, strings.Repeat("=", n),
			strings.Repeat(" ", width-n), p.done, p.total, frac*100)
	case p.done > 0:
		line = fmt.Sprintf("%s %s %d", frame, p.label, p.done)
	default:
		line = fmt.Sprintf("%s %s", frame, p.label)
	}
	pad := ""
	if n := len(line); n < p.lastLen {
		pad = strings.Repeat(" ", p.lastLen-n)
	}
	p.lastLen = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
}
