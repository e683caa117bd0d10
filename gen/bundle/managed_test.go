package bundle_test

import (
	"strings"
	"testing"

	"github.com/winobs/winobs/gen/bundle"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/managedrules"
)

// Each row of the managed table renders through its renderer into its own
// folder (its exporter monitor too when the row says so), the config takes
// its name, and no renderer is left without a row.
func TestEveryManagedServiceRenders(t *testing.T) {
	dirs := map[string]string{}
	for _, svc := range managed.Services {
		t.Run(svc.Name, func(t *testing.T) {
			if other, ok := dirs[svc.Dir]; ok || !strings.HasSuffix(svc.Dir, "/") {
				t.Errorf("folder %q: taken by %q, or not a folder", svc.Dir, other)
			}
			dirs[svc.Dir] = svc.Name
			if _, ok := bundle.Renderers[svc.Name]; !ok {
				t.Fatalf("no renderer in bundle.Renderers")
			}
			cfg, err := config.Load("")
			if err != nil {
				t.Fatal(err)
			}
			managedrules.OnService(cfg, svc.Name)
			if problems := config.Validate(cfg); len(problems) > 0 {
				t.Fatalf("the config refuses prometheus.platform %q: %v", svc.Name, problems)
			}
			files, err := bundle.Build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var own, monitor int
			for _, f := range files {
				if strings.HasPrefix(f.Path, svc.Dir) {
					own++
				}
				if strings.HasSuffix(f.Path, "windows-exporter-monitor.yaml") {
					monitor++
					if !svc.MonitorBeside || !strings.HasPrefix(f.Path, svc.Dir) {
						t.Errorf("%s: the monitor is written beside, but the row says MonitorBeside %v", f.Path, svc.MonitorBeside)
					}
				}
			}
			if own == 0 || svc.MonitorBeside != (monitor == 1) {
				t.Errorf("%d files in %s, %d monitors beside (MonitorBeside %v)", own, svc.Dir, monitor, svc.MonitorBeside)
			}
			if got := view.Of(cfg).Managed.Service; got.Name != svc.Name {
				t.Errorf("the view routes %q", got.Name)
			}
		})
	}
	for name := range bundle.Renderers {
		if _, ok := managed.Lookup(name); !ok {
			t.Errorf("renderer %q has no row in managed.Services", name)
		}
	}
	// Without a managed service, nothing is rendered for one.
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if files, err := bundle.Managed(view.Of(cfg).Managed); err != nil || len(files) > 0 {
		t.Errorf("no managed Prometheus: %d files, %v", len(files), err)
	}
}
