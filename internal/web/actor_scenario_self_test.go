package web

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/labstack/echo/v4"

	"harness/internal/models"
)

// TestScenarioHarnessCatchesProblems runs the harness over routes that
// misbehave on purpose: it must report each problem.
func TestScenarioHarnessCatchesProblems(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, scenarioOptions{Routes: misbehavingRoutes})

	incomplete := expect(200)
	delete(incomplete, actorViewer)
	tests := []struct {
		name string
		row  scenarioRow
		want string // a substring every reported problem must have; "" = no problem
		n    int    // how many problems
	}{
		{"read-only row that appends", scenarioRow{Name: "a", Method: "POST", Path: "/test/append", Want: expect(200)}, "changed the store", len(allActors)},
		{"mutating row that appends", scenarioRow{Name: "b", Method: "POST", Path: "/test/append", Want: expect(200), Mutates: true}, "", 0},
		{"refused but appended", scenarioRow{Name: "c", Method: "POST", Path: "/test/refuse-after-append", Want: expect(403), Mutates: true}, "changed the store", len(allActors)},
		{"wrong status", scenarioRow{Name: "d", Method: "POST", Path: "/test/append", Want: expect(201), Mutates: true}, "want 201", len(allActors)},
		{"missing actor", scenarioRow{Name: "e", Method: "POST", Path: "/test/append", Want: incomplete, Mutates: true}, "no expectation for actor viewer", 1},
		{"leaks a secret", scenarioRow{Name: "f", Method: "GET", Path: "/test/leak", Want: expect(200)}, "contains a secret", len(allActors)},
	}
	for _, tt := range tests {
		problems := env.run(t, []scenarioRow{tt.row})
		if len(problems) != tt.n {
			t.Errorf("%s: %d problems, want %d: %q", tt.name, len(problems), tt.n, problems)
			continue
		}
		for _, p := range problems {
			if !strings.Contains(p, tt.want) {
				t.Errorf("%s: problem %q lacks %q", tt.name, p, tt.want)
			}
		}
	}
}

// misbehavingRoutes append to the session whoever asks, refuse after
// appending, or leak a share token.
func misbehavingRoutes(env *scenarioEnv, s *Server) {
	var seq atomic.Int64
	appendThen := func(status int) echo.HandlerFunc {
		return func(c echo.Context) error {
			n := seq.Add(1)
			var key int64
			if err := env.DB.R.Model(&models.Session{}).Where("id = ?", env.SessionID).Select("log_key").Scan(&key).Error; err != nil {
				return err
			}
			ev := models.LogRow{LogKey: key, Seq: n, N: 1, Time: n, Type: "test", Body: []byte("{}")}
			if err := env.DB.W.Create(&ev).Error; err != nil {
				return err
			}
			return c.NoContent(status)
		}
	}
	s.e.POST("/test/append", appendThen(http.StatusOK))
	s.e.POST("/test/refuse-after-append", appendThen(http.StatusForbidden))
	s.e.GET("/test/leak", func(c echo.Context) error {
		return c.String(http.StatusOK, env.shares[actorShare])
	})
}
