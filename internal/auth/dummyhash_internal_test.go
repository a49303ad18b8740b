package auth

import (
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestDummyHash: the stored hash is of the dummy password at the default
// cost, so an unknown name costs a login exactly what a wrong password
// does; other costs (tests) compute theirs.
func TestDummyHash(t *testing.T) {
	t.Parallel()
	for _, cost := range []int{bcrypt.DefaultCost, bcrypt.MinCost} {
		h := NewService(nil, nil, Options{BcryptCost: cost}).dummyHash()
		if got, err := bcrypt.Cost(h); err != nil || got != cost {
			t.Fatalf("cost %d: hash cost %d, %v", cost, got, err)
		}
		if err := bcrypt.CompareHashAndPassword(h, []byte(dummyPassword)); err != nil {
			t.Fatalf("cost %d: the dummy hash is not of the dummy password: %v", cost, err)
		}
	}
}
