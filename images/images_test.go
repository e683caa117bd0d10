// Package images_test checks the inputs of the image builds that cannot run
// here (docker buildx, a registry): the Dockerfiles, the Makefile's images
// target and the release workflow, against versions.json, go.mod and the
// DaemonSets that run the images.
package images_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/winobs/winobs"
	"github.com/winobs/winobs/gen/bundle"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/view"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct{ cmd, args string }

func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur string
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, `\`) && !strings.HasPrefix(trimmed, "ENTRYPOINT") {
			cur += strings.TrimSuffix(trimmed, `\`) + " "
			continue
		}
		cur += trimmed
		cmd, args, _ := strings.Cut(cur, " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur = ""
	}
	return out
}

// buildArgs are the --build-arg names the Makefile passes with the given
// Dockerfile, and the build context it names.
func buildArgs(t *testing.T, dockerfile string) (map[string]bool, string) {
	t.Helper()
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	recipe := regexp.MustCompile(`(?s)docker buildx build [^\n]*-f ` + regexp.QuoteMeta(dockerfile) + `(.*?)\n\t(?:docker|$)|` +
		`docker buildx build [^\n]*-f ` + regexp.QuoteMeta(dockerfile) + `(.*)`).FindStringSubmatch(string(b))
	if recipe == nil {
		t.Fatalf("the Makefile does not build %s", dockerfile)
	}
	body := strings.ReplaceAll(recipe[1]+recipe[2], "\\\n", " ")
	if i := strings.Index(body, "\n"); i >= 0 {
		body = body[:i]
	}
	args := map[string]bool{}
	for _, m := range regexp.MustCompile(`--build-arg (\w+)=`).FindAllStringSubmatch(body, -1) {
		args[m[1]] = true
	}
	fields := strings.Fields(body)
	return args, fields[len(fields)-1]
}

// command is the container command of the DaemonSet a builder renders.
func command(t *testing.T, builder string) string {
	t.Helper()
	i := slices.IndexFunc(bundle.Builders, func(b bundle.Builder) bool { return b.Name == builder })
	if i < 0 {
		t.Fatalf("no builder %s", builder)
	}
	cfg := config.Default()
	cfg.Shipper.Deploy = true
	fs, err := bundle.Builders[i].Build(view.Of(cfg))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		for _, o := range f.Objects {
			if ds, ok := o.(*appsv1.DaemonSet); ok {
				return ds.Spec.Template.Spec.Containers[0].Command[0]
			}
		}
	}
	t.Fatal("no DaemonSet")
	return ""
}

// Each Dockerfile builds on Linux (no RUN in its Windows stage), takes its
// bases and versions only from the Makefile's build args, copies only what
// exists, and starts what its DaemonSet runs from where it put it.
func TestDockerfiles(t *testing.T) {
	for _, tc := range []struct {
		dockerfile, copied string
		builder            string   // its name in bundle.Builders
		sources            []string // paths in the build context the build reads
	}{
		{"images/eventlog-shipper/Dockerfile", "/eventlog-shipper.exe", "eventlog-shipper", []string{"go.mod", "go.sum", "cmd/eventlog-shipper/main.go"}},
		{"images/alloy/Dockerfile", "/Program Files/GrafanaLabs/Alloy/alloy.exe", "alloy", nil},
	} {
		t.Run(tc.dockerfile, func(t *testing.T) {
			ins := parseDockerfile(t, filepath.Join("..", tc.dockerfile))
			passed, context := buildArgs(t, tc.dockerfile)
			declared, stages, last := map[string]bool{}, map[string]bool{}, -1
			for i, in := range ins {
				switch in.cmd {
				case "ARG":
					name, _, hasDefault := strings.Cut(in.args, "=")
					declared[name] = true
					if !passed[name] && !hasDefault {
						t.Errorf("ARG %s is never passed by the Makefile and has no default", name)
					}
				case "FROM":
					last = i
					if f := strings.Fields(in.args); len(f) >= 3 && strings.EqualFold(f[len(f)-2], "AS") {
						stages[f[len(f)-1]] = true
					}
					for _, m := range regexp.MustCompile(`\$\{?(\w+)`).FindAllStringSubmatch(in.args, -1) {
						if m[1] != "BUILDPLATFORM" && !declared[m[1]] {
							t.Errorf("FROM uses %s, not declared before it", m[1])
						}
					}
				}
			}
			for name := range passed {
				if !declared[name] {
					t.Errorf("the Makefile passes %s, which the Dockerfile does not declare", name)
				}
			}
			final := ins[last:]
			if final[0].args != "${BASE_IMAGE}" {
				t.Errorf("the final stage is FROM %s, want ${BASE_IMAGE} (versions.json hostProcessBaseImage)", final[0].args)
			}
			var entrypoint []string
			copied := false
			for _, in := range final {
				switch in.cmd {
				case "RUN":
					t.Errorf("RUN in the Windows stage cannot be built on Linux: %s", in.args)
				case "COPY":
					flag, paths, _ := strings.Cut(in.args, " ")
					if from, ok := strings.CutPrefix(flag, "--from="); !ok || !stages[from] {
						t.Errorf("COPY %s: the Windows stage copies only from an earlier stage", in.args)
					}
					// The exec form (a JSON array) carries paths with spaces.
					var f []string
					if err := json.Unmarshal([]byte(paths), &f); err != nil {
						f = strings.Fields(paths)
					}
					copied = copied || f[len(f)-1] == tc.copied
				case "ENTRYPOINT":
					if err := json.Unmarshal([]byte(in.args), &entrypoint); err != nil {
						t.Errorf("ENTRYPOINT %s is not the exec form (a JSON array): %v", in.args, err)
					}
				}
			}
			if !copied {
				t.Errorf("nothing is copied to %s", tc.copied)
			}
			cmd := command(t, tc.builder)
			// Relative to the image's mount, or under the variable naming it.
			inImage := strings.TrimPrefix(cmd, `%CONTAINER_SANDBOX_MOUNT_POINT%`)
			if len(entrypoint) != 1 || entrypoint[0] != cmd || strings.ReplaceAll("/"+strings.TrimPrefix(inImage, `\`), `\`, "/") != tc.copied {
				t.Errorf("ENTRYPOINT %q, the DaemonSet runs %q, the binary is at %s", entrypoint, cmd, tc.copied)
			}
			for _, src := range tc.sources {
				if _, err := os.Stat(filepath.Join("..", context, src)); err != nil {
					t.Errorf("the build reads %s from context %s: %v", src, context, err)
				}
			}
		})
	}
}

// The images' tags follow versions.json: the shipper's is this winobs, the
// Alloy image's is the Alloy release it packs; the Go image is go.mod's Go.
func TestImageTagsFollowVersions(t *testing.T) {
	v := winobs.Pinned()
	tag := func(ref string) string { return ref[strings.LastIndex(ref, ":")+1:] }
	if tag(v.EventlogShipperImage) != v.Winobs {
		t.Errorf("eventlogShipperImage %s, winobs %s", v.EventlogShipperImage, v.Winobs)
	}
	// Grafana tags its Windows images <release>-windowsservercore-ltsc2022.
	if tag(v.AlloyImage) != v.Alloy+"-windowsservercore-ltsc2022" || !strings.HasPrefix(v.AlloyImage, "docker.io/grafana/alloy:") {
		t.Errorf("alloyImage %s is not Grafana's Windows image of alloy %s", v.AlloyImage, v.Alloy)
	}
	if tag(v.AlloyHostProcessImage) != v.Alloy {
		t.Errorf("alloyHostProcessImage %s, alloy %s", v.AlloyHostProcessImage, v.Alloy)
	}
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if goVersion == nil || !strings.HasPrefix(tag(v.GoImage), string(goVersion[1])) {
		t.Errorf("goImage %s, go.mod says go %s", v.GoImage, goVersion)
	}
	cfg := config.Default()
	if cfg.Shipper.Image != v.EventlogShipperImage || cfg.Alloy.Image != v.AlloyImage {
		t.Errorf("the rendered images %s, %s are not versions.json's", cfg.Shipper.Image, cfg.Alloy.Image)
	}
}

// The release workflow runs on version tags, refuses a tag that is not
// versions.json's, checks the manifests and pushes with make images.
func TestReleaseWorkflow(t *testing.T) {
	b, err := os.ReadFile("../.github/workflows/release.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On struct {
			Push struct{ Tags []string }
		}
		Permissions map[string]string
		Jobs        map[string]struct {
			Permissions map[string]string
			Steps       []struct{ Run, Uses string }
		}
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	if len(wf.On.Push.Tags) != 1 || wf.On.Push.Tags[0] != "v*" || wf.Permissions["packages"] != "write" || wf.Permissions["contents"] != "read" {
		t.Errorf("%+v", wf)
	}
	var runs []string
	for _, s := range wf.Jobs["images"].Steps {
		runs = append(runs, s.Run)
	}
	all := strings.Join(runs, "\n")
	for _, want := range []string{`test "$GITHUB_REF_NAME" = "$want"`, "make check-generated", "make images PUSH=1"} {
		if !strings.Contains(all, want) {
			t.Errorf("the workflow does not run %q", want)
		}
	}
	// gen's binaries: built by the Makefile for Linux, macOS and Windows,
	// attached to the tag's release by the only job that may write.
	gen := wf.Jobs["gen"]
	runs = nil
	for _, s := range gen.Steps {
		runs = append(runs, s.Run)
	}
	all = strings.Join(runs, "\n")
	for _, want := range []string{`test "$GITHUB_REF_NAME" = "$want"`, "make release-gen", "bin/release/*"} {
		if !strings.Contains(all, want) {
			t.Errorf("the gen job does not run %q", want)
		}
	}
	if gen.Permissions["contents"] != "write" || len(gen.Permissions) != 1 || wf.Jobs["images"].Permissions != nil {
		t.Errorf("permissions: gen %v, images %v", gen.Permissions, wf.Jobs["images"].Permissions)
	}
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	platforms := regexp.MustCompile(`(?m)^GEN_PLATFORMS := (.*)$`).FindSubmatch(mk)
	if platforms == nil {
		t.Fatal("the Makefile has no GEN_PLATFORMS")
	}
	for _, want := range []string{"linux/amd64", "darwin/arm64", "windows/amd64"} {
		if !strings.Contains(string(platforms[1]), want) {
			t.Errorf("GEN_PLATFORMS %q lacks %s", platforms[1], want)
		}
	}
}

// The shipper's build context keeps what go build reads.
func TestDockerignoreKeepsTheBuildInputs(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		for _, kept := range []string{"go.mod", "go.sum", "cmd/", "shipper/", "conffile/", "endpoint/", "versions.json"} {
			if line != "" && !strings.HasPrefix(line, "#") && strings.HasPrefix(kept, strings.TrimSuffix(line, "/")) {
				t.Errorf(".dockerignore line %q drops %s", line, kept)
			}
		}
	}
}

// Every action a workflow runs is named by its commit, the release it was
// in a comment: a tag can be moved to other code, and the release job may
// write packages.
func TestActionsArePinnedByCommit(t *testing.T) {
	files, err := filepath.Glob("../.github/workflows/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflows: %v", err)
	}
	uses := regexp.MustCompile(`(?m)^\s*(?:-\s+)?uses:\s*(.*)$`)
	pinned := regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$`)
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range uses.FindAllStringSubmatch(string(b), -1) {
			n++
			if !pinned.MatchString(strings.TrimSpace(m[1])) {
				t.Errorf("%s: uses %q: want owner/repo@<40-hex commit> # vX.Y.Z", filepath.Base(f), m[1])
			}
		}
	}
	if n == 0 {
		t.Error("no uses: read in the workflows")
	}
}

// alloy.exe runs as SYSTEM on every node: the Alloy image is built only
// from a zip whose hash this repository pins. pinned.sh prints the pin of a
// version, and refuses a missing or malformed one with the command that
// records it; the Makefile asks it before any build, and the Dockerfile
// checks the zip against the pin it is given, never without one.
func TestAlloyIsBuiltOnlyFromAPinnedZip(t *testing.T) {
	dir := t.TempDir()
	script, err := os.ReadFile("alloy/pinned.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "pins"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pinned.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	hash := strings.Repeat("0123456789abcdef", 4)
	for _, tc := range []struct {
		name, pin string // pin "" writes no file
		code      int
		out       string
	}{
		{"no pin", "", 2, "make pin-alloy"},
		{"a sum of another file", hash + "  alloy-linux-amd64.zip\n", 2, "want one line"},
		{"upper-case hex", strings.ToUpper(hash) + "  alloy-windows-amd64.exe.zip\n", 2, "want one line"},
		{"two lines", hash + "  alloy-windows-amd64.exe.zip\n" + hash + "  alloy-windows-amd64.exe.zip\n", 2, "want one line"},
		{"pinned", "# v9.9.9, from the release's SHA256SUMS\n" + hash + "  alloy-windows-amd64.exe.zip\n", 0, hash + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pin := filepath.Join(dir, "pins", "v9.9.9.sha256")
			os.Remove(pin)
			if tc.pin != "" {
				if err := os.WriteFile(pin, []byte(tc.pin), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(filepath.Join(dir, "pinned.sh"), "v9.9.9")
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			got := stdout.String()
			if code != 0 {
				got = stderr.String()
			}
			if code != tc.code || (code == 0 && got != tc.out) || (code != 0 && (stdout.Len() > 0 || !strings.Contains(got, tc.out))) {
				t.Errorf("exit %d, stdout %q, stderr %q: want exit %d and %q", code, stdout.String(), stderr.String(), tc.code, tc.out)
			}
		})
	}
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	recipe := regexp.MustCompile(`(?m)^image-alloy:.*\n((?:\t.*\n)+)`).FindSubmatch(mk)
	if recipe == nil || !strings.HasPrefix(string(recipe[1]), "\t@images/alloy/pinned.sh $(ALLOY_VERSION) >/dev/null || exit 2\n") ||
		!strings.Contains(string(recipe[1]), "ALLOY_ZIP_SHA256=$$(images/alloy/pinned.sh $(ALLOY_VERSION))") {
		t.Errorf("the Makefile's image-alloy does not ask pinned.sh first and pass its pin:\n%s", recipe)
	}
	df, err := os.ReadFile("alloy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	check := regexp.MustCompile(`RUN test -n "\$ALLOY_ZIP_SHA256" \\\n && echo "\$ALLOY_ZIP_SHA256  alloy-windows-amd64\.exe\.zip" \| sha256sum -c - \\\n`)
	if !check.Match(df) || strings.Index(string(df), "sha256sum -c") > strings.Index(string(df), "unzip") {
		t.Error("the Alloy Dockerfile does not check the zip against a required pin before unzipping it")
	}
}
