package auth

import (
	"log/slog"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Defaults for Options' zero values.
const (
	DefaultIdleTimeout     = 24 * time.Hour
	DefaultAbsoluteTimeout = 30 * 24 * time.Hour
	DefaultLoginFailures   = 5
	DefaultLoginWindow     = time.Minute
)

// Options tune the Service; zero values take the defaults.
type Options struct {
	// Now is the clock (tests inject one). Default time.Now.
	Now func() time.Time
	// IdleTimeout ends a login session unused this long (sliding).
	IdleTimeout time.Duration
	// AbsoluteTimeout ends a login session this long after login, used or not.
	AbsoluteTimeout time.Duration
	// BcryptCost; default bcrypt.DefaultCost. Tests use bcrypt.MinCost.
	BcryptCost int
	// LoginFailures failed logins per LoginWindow are allowed per pair of
	// user name and client address; the pair's next attempt is refused.
	// There is no limit per name alone: failures from one address never
	// lock the name out for anyone else.
	LoginFailures int
	// LoginAddrFailures failed logins per LoginWindow are allowed per
	// client address, whatever the names (default 4 × LoginFailures); the
	// address's next attempt is refused. This is what slows a guesser
	// down.
	LoginAddrFailures int
	LoginWindow       time.Duration
}

// Service is accounts and access control over a Store.
type Service struct {
	log   *slog.Logger
	store Store
	now   func() time.Time
	idle  time.Duration
	abs   time.Duration
	cost  int
	// pairs counts failed logins per (name, address), addrs per address.
	pairs, addrs *limiter
	// dummyHash is compared against when the user is unknown, so an unknown
	// name costs the same bcrypt work as a wrong password.
	dummyHash func() []byte
	// notices are the listeners of SubscribeAccess.
	notices notices
}

// dummyPassword is what dummyHash hashes. defaultCostDummyHash is its hash
// at bcrypt.DefaultCost, computed once and kept here: generating it costs
// as much as a login (about 70 ms of CPU), which every server start paid
// before its first answer. Comparing against it costs what comparing
// against any hash of that cost does, which is all the dummy is for; that
// its salt is public changes nothing, since no user has this hash.
const (
	dummyPassword        = "harness-dummy-password"
	defaultCostDummyHash = "$2a$10$9UdjL5X01YsysN32xhllf.mA1.FKf135aLSBserAUREQZVEJbkzuy"
)

// NewService builds a Service. It starts no goroutines.
func NewService(log *slog.Logger, store Store, opts Options) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.AbsoluteTimeout <= 0 {
		opts.AbsoluteTimeout = DefaultAbsoluteTimeout
	}
	if opts.BcryptCost == 0 {
		opts.BcryptCost = bcrypt.DefaultCost
	}
	if opts.LoginFailures <= 0 {
		opts.LoginFailures = DefaultLoginFailures
	}
	if opts.LoginAddrFailures <= 0 {
		// Several people behind one address (an office) may mistype
		// without locking each other out; guessing stays slow.
		opts.LoginAddrFailures = 4 * opts.LoginFailures
	}
	if opts.LoginWindow <= 0 {
		opts.LoginWindow = DefaultLoginWindow
	}
	s := &Service{
		log:   log,
		store: store,
		idle:  opts.IdleTimeout,
		abs:   opts.AbsoluteTimeout,
		cost:  opts.BcryptCost,
		pairs: newLimiter(opts.LoginFailures, opts.LoginWindow),
		addrs: newLimiter(opts.LoginAddrFailures, opts.LoginWindow),
	}
	clock := opts.Now
	s.now = func() time.Time { return clock().UTC().Truncate(time.Microsecond) }
	s.dummyHash = sync.OnceValue(func() []byte {
		if s.cost == bcrypt.DefaultCost {
			return []byte(defaultCostDummyHash)
		}
		h, err := bcrypt.GenerateFromPassword([]byte(dummyPassword), s.cost)
		if err != nil {
			// Only an invalid cost fails, and hashPassword reports that.
			return nil
		}
		return h
	})
	return s
}
