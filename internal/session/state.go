package session

import "slices"

// State is the incremental fold of the log's lifecycle and last-wins events.
type State struct {
	LastTurn int            `json:"lastTurn"` // turn number of the last turn/start (0 if none)
	TurnOpen bool           `json:"turnOpen"`
	Step     int            `json:"step"` // current or last step of the open turn (0 if none)
	StepOpen bool           `json:"stepOpen"`
	Mode     PermissionMode `json:"mode"`            // last permission/mode (default ModeAsk)
	Model    *ModelSelected `json:"model,omitempty"` // last model/selected, nil if none
	// Effort is the last model/effort, nil if none.
	Effort *EffortSelected `json:"effort,omitempty"`
	Title  string          `json:"title,omitempty"` // last session/title
	Todos  []Todo          `json:"todos,omitempty"` // last todo/write
	// AllowedTools are the tools allowed for the rest of the session
	// (approval/decided allowed-session, minus later approval/revoked),
	// sorted; nil when none.
	AllowedTools []string `json:"allowedTools,omitempty"`
}

// ToolAllowed reports whether calls of tool were allowed for the session.
func (s State) ToolAllowed(tool string) bool {
	_, ok := slices.BinarySearch(s.AllowedTools, tool)
	return ok
}

// fold is everything the log derives incrementally besides the surface.
type fold struct {
	state       State
	header      *EpochHeader
	lastEndSeed int64
}

func newFold() fold { return fold{state: State{Mode: ModeAsk}, lastEndSeed: -1} }

// apply folds one admitted event; payload is the value decodePayload returned.
func (f *fold) apply(ev Event, payload any) {
	s := &f.state
	switch ev.Type {
	case TypeTurnStart:
		s.LastTurn = payload.(*TurnStart).Turn
		s.TurnOpen, s.Step, s.StepOpen = true, 0, false
	case TypeTurnEnd:
		s.TurnOpen, s.Step, s.StepOpen = false, 0, false
	case TypeStepStart:
		s.Step, s.StepOpen = payload.(*StepBoundary).Step, true
	case TypeStepEnd:
		s.StepOpen = false
	case TypePermissionMode:
		s.Mode = payload.(*PermissionModeSet).Mode
	case TypeModelSelected:
		m := *payload.(*ModelSelected)
		s.Model = &m
	case TypeEffortSelected:
		e := *payload.(*EffortSelected)
		s.Effort = &e
	case TypeSessionTitle:
		s.Title = payload.(*SessionTitle).Title
	case TypeTodoWrite:
		s.Todos = payload.(*TodoWrite).Todos
	case TypeApprovalDecided:
		if d := payload.(*ApprovalDecided); d.Outcome == ApprovalAllowedSession && d.Tool != "" {
			if i, found := slices.BinarySearch(s.AllowedTools, d.Tool); !found {
				s.AllowedTools = slices.Insert(s.AllowedTools, i, d.Tool)
			}
		}
	case TypeApprovalRevoked:
		if i, found := slices.BinarySearch(s.AllowedTools, payload.(*ApprovalRevoked).Tool); found {
			s.AllowedTools = slices.Delete(s.AllowedTools, i, i+1)
			if len(s.AllowedTools) == 0 {
				s.AllowedTools = nil
			}
		}
	case TypeRequestHeader:
		h := payload.(*RequestHeader).Header
		f.header = &h
	case TypeEndSeed:
		f.lastEndSeed = ev.Seq
	}
}

// State returns the folded state; the result shares nothing with the log.
func (l *Log) State() State {
	l.mu.RLock()
	defer l.mu.RUnlock()
	s := l.fold.state
	s.Todos = slices.Clone(s.Todos)
	s.AllowedTools = slices.Clone(s.AllowedTools)
	if s.Model != nil {
		m := *s.Model
		if m.By != nil {
			by := *m.By
			m.By = &by
		}
		s.Model = &m
	}
	if s.Effort != nil {
		e := *s.Effort
		if e.By != nil {
			by := *e.By
			e.By = &by
		}
		s.Effort = &e
	}
	return s
}

// RequestHeader returns the latest request/header snapshot (§1.6). Slices
// and pointers are copied; the tools' Parameters bytes are shared and must
// not be modified.
func (l *Log) RequestHeader() (EpochHeader, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.fold.header == nil {
		return EpochHeader{}, false
	}
	h := *l.fold.header
	h.Tools = slices.Clone(h.Tools)
	h.Config.Stop = slices.Clone(h.Config.Stop)
	if h.Config.Temperature != nil {
		t := *h.Config.Temperature
		h.Config.Temperature = &t
	}
	if h.AdapterDefaults != nil {
		d := *h.AdapterDefaults
		h.AdapterDefaults = &d
	}
	return h, true
}

// LastEndSeed returns the seq of the last session/end-seed, -1 if none.
func (l *Log) LastEndSeed() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.fold.lastEndSeed
}
