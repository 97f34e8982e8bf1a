package cli

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// leakSecret stands for a file of the CI job outside the repository (the
// kubeconfig a workflow writes to its temporary folder).
const leakSecret = "apiVersion: v1\nusers:\n- user:\n    token: CI-ONLY-TOKEN-5f1e2d\n"

// leakyChartRepo is a fleet repository whose change a pull request made:
// [charts] in the manifests mode names a chart folder in the repository,
// whose charts hold files/leak, a symbolic link to a file outside the
// repository, and a template that fails with that file's content. It
// returns the repository, its fleet file and the secret file.
func leakyChartRepo(t *testing.T) (dir, fleetFile, secret string, git func(...string) string) {
	t.Helper()
	dir, fleetFile, git = renderedRepo(t, fleettest.ExampleWithoutStack(t))
	secret = filepath.Join(t.TempDir(), "_temp", "kubeconfig")
	if err := os.MkdirAll(filepath.Dir(secret), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte(leakSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	git("checkout", "-q", "-b", "change")
	for _, c := range []struct{ name, version string }{
		{"gpu-operator", "v25.3.4"}, {"gpu-operator", "v25.10.1"},
		{"network-operator", "v25.4.0"}, {"network-operator", "v25.10.0"},
	} {
		chartDir := filepath.Join(dir, "charts", c.name, c.version)
		for file, data := range map[string]string{
			"Chart.yaml":          "apiVersion: v2\nname: " + c.name + "\nversion: " + c.version + "\n",
			"templates/leak.yaml": "{{ fail (.Files.Get \"files/leak\" | b64enc) }}\n",
		} {
			p := filepath.Join(chartDir, filepath.FromSlash(file))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		link := filepath.Join(chartDir, "files", "leak")
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(filepath.Dir(link), secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(rel, link); err != nil {
			t.Skipf("symbolic links unavailable here: %v", err)
		}
	}
	editFleet(t, fleetFile, "[charts]\n", "[charts]\nmode = \"manifests\"\n")
	editFleet(t, fleetFile, `repository = "https://helm.ngc.nvidia.com/nvidia"`, `repository = "charts"`)
	git("add", "-A")
	git("commit", "-q", "-m", "charts from the repository")
	return dir, fleetFile, secret, git
}

func editFleet(t *testing.T, fleetFile, from, to string) {
	t.Helper()
	src, err := os.ReadFile(fleetFile)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(src), from, to, 1)
	if edited == string(src) {
		t.Fatalf("no %q in %s", from, fleetFile)
	}
	if err := os.WriteFile(fleetFile, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
}

// noLeak fails when the secret, or its base64 (which a log's masking of
// the secret itself would miss), is anywhere in what a command printed.
func noLeak(t *testing.T, what, output string) {
	t.Helper()
	for _, s := range []string{"CI-ONLY-TOKEN-5f1e2d", base64.StdEncoding.EncodeToString([]byte(leakSecret))} {
		if strings.Contains(output, s) {
			t.Errorf("%s prints the file outside the repository:\n%s", what, output)
		}
	}
}

// TestRepositoryChartsReadNothingOutside: render, validate and verify
// refuse a chart of the repository holding a symbolic link out of it, and
// the file it points to is in none of their outputs (text, JSON,
// annotations, the GitLab report); a template's failure message, which can
// carry a file of the chart, is not printed either, only which template
// failed.
func TestRepositoryChartsReadNothingOutside(t *testing.T) {
	dir, fleetFile, _, git := leakyChartRepo(t)
	codeQuality := filepath.Join(t.TempDir(), "gl-code-quality-report.json")
	runs := map[string][]string{
		"render":         {"render", "-f", fleetFile},
		"render --check": {"render", "--check", "-f", fleetFile},
		"validate":       {"validate", "-f", fleetFile},
		"validate json":  {"validate", "-f", fleetFile, "-o", "json"},
		"verify":         {"verify", "--base", "main", "-f", fleetFile, "--no-gate", "--annotations", "github"},
		"verify json":    {"verify", "--base", "main", "-f", fleetFile, "--no-gate", "-o", "json"},
		"verify gitlab":  {"verify", "--base", "main", "-f", fleetFile, "--no-gate", "--annotations", "gitlab", "--codequality", codeQuality},
	}
	check := func(t *testing.T, want string) {
		for name, args := range runs {
			code, out, errOut := run(t, args...)
			if code == ExitOK {
				t.Errorf("%s: exit 0, want a refusal\n%s%s", name, out, errOut)
			}
			noLeak(t, name, out+errOut)
			if !strings.Contains(out+errOut, want) {
				t.Errorf("%s does not say %q:\n%s%s", name, want, out, errOut)
			}
		}
		report, err := os.ReadFile(codeQuality)
		if err != nil {
			t.Fatal(err)
		}
		noLeak(t, "the GitLab report", string(report))
	}
	t.Run("link out of the chart", func(t *testing.T) {
		check(t, "files/leak: symbolic link out of the chart's folder")
	})
	if b, err := os.ReadFile(filepath.Join(dir, "clusters", "stg-h100", "kustomization.yaml")); err != nil || strings.Contains(string(b), "CI-ONLY") {
		t.Fatalf("render wrote what it read: %v", err)
	}

	// Were the file in the chart (committed, or read some other way), the
	// template's failure would still not print it.
	t.Run("template failure", func(t *testing.T) {
		for _, c := range []string{"gpu-operator/v25.3.4", "gpu-operator/v25.10.1", "network-operator/v25.4.0", "network-operator/v25.10.0"} {
			leak := filepath.Join(dir, "charts", filepath.FromSlash(c), "files", "leak")
			if err := os.Remove(leak); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(leak, []byte(leakSecret), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		git("commit", "-q", "-am", "the file in the chart")
		check(t, "templates/leak.yaml:1:3 failed (its message is not shown")
	})
}

// TestFleetChartFolderStaysInRepository: verify, the check a pull request
// runs, reads no chart folder outside the repository, even one the fleet
// file names by an absolute path (as `gpufleet init` writes one for the
// operator's own machine, where render still reads it).
func TestFleetChartFolderStaysInRepository(t *testing.T) {
	_, fleetFile, _ := verifyRepo(t)
	outside := filepath.Join(t.TempDir(), "charts")
	if err := os.MkdirAll(filepath.Join(outside, "gpu-operator"), 0o755); err != nil {
		t.Fatal(err)
	}
	editFleet(t, fleetFile, "[charts]\n", "[charts]\nmode = \"manifests\"\n")
	editFleet(t, fleetFile, `repository = "https://helm.ngc.nvidia.com/nvidia"`, `repository = "`+outside+`"`)
	code, out, errOut := run(t, "verify", "--base", "main", "-f", fleetFile, "--no-gate")
	if code == ExitOK || !strings.Contains(out, "out of the fleet repository") {
		t.Errorf("verify with an absolute chart folder outside the repository: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "render", "-f", fleetFile); code == ExitOK || strings.Contains(out+errOut, "out of the fleet repository") || !strings.Contains(out+errOut, "chart not found") {
		t.Errorf("render with the operator's absolute chart folder: exit %d; want it read (and the chart not found there)\n%s%s", code, out, errOut)
	}
	editFleet(t, fleetFile, `repository = "`+outside+`"`, `repository = "../../../../../../../../../../`+strings.TrimPrefix(outside, "/")+`"`)
	if code, out, errOut := run(t, "render", "-f", fleetFile); code == ExitOK || !strings.Contains(out+errOut, "out of the fleet repository") {
		t.Errorf("render with a relative chart folder leaving the repository: exit %d\n%s%s", code, out, errOut)
	}
}

// TestVerifyRefusesLinkedFleetFile: a fleet file committed as a link out
// of the repository is not read by verify.
func TestVerifyRefusesLinkedFleetFile(t *testing.T) {
	dir, fleetFile, git := renderedRepo(t, fleettest.ExampleWithoutStack(t))
	secret := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(secret, []byte("CI_ONLY_KEY = \"CI-ONLY-TOKEN-5f1e2d\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	git("checkout", "-q", "-b", "change")
	if err := os.Remove(fleetFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, fleetFile); err != nil {
		t.Skipf("symbolic links unavailable here: %v", err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "fleet.toml linked out")
	code, out, errOut := run(t, "verify", "--base", "main", "-f", fleetFile, "--no-gate", "--no-validate")
	if code != ExitFailed || !strings.Contains(errOut, "leaves") || strings.Contains(out+errOut, "CI_ONLY_KEY") {
		t.Errorf("verify of a fleet file linked out of %s: exit %d\n%s%s", dir, code, out, errOut)
	}
}

// TestRenderRefusesLinkedOutputFolder: a folder of the rendered tree
// committed as a symbolic link is refused by render (nothing written
// where it points) and by verify's rendered check.
func TestRenderRefusesLinkedOutputFolder(t *testing.T) {
	dir, fleetFile, git := renderedRepo(t, fleettest.ExampleWithoutStack(t))
	elsewhere := t.TempDir()
	cluster := filepath.Join(dir, "clusters", "stg-h100")
	if err := os.RemoveAll(cluster); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, cluster); err != nil {
		t.Skipf("symbolic links unavailable here: %v", err)
	}
	git("checkout", "-q", "-b", "change")
	git("add", "-A")
	git("commit", "-q", "-m", "a linked cluster folder")
	for _, args := range [][]string{
		{"render", "-f", fleetFile},
		{"render", "--check", "-f", fleetFile},
		{"verify", "--base", "main", "-f", fleetFile, "--no-gate", "--no-validate"},
	} {
		code, out, errOut := run(t, args...)
		if code == ExitOK || !strings.Contains(out+errOut, "clusters/stg-h100 is a symbolic link") {
			t.Errorf("gpufleet %s: exit %d, want the link refused\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("render wrote through the link: %v", entries)
	}
}

// TestNamesUsedAsPathsRefused: a secret named ../../escaped and an
// environment named base stop every command at the fleet file, with its
// file, line and key; `secret encrypt` writes nothing, and refuses a
// linked folder on the way to a declared secret.
func TestNamesUsedAsPathsRefused(t *testing.T) {
	fleetFile, _ := fleetWithKeys(t)
	dir := filepath.Dir(fleetFile)
	editFleet(t, fleetFile, `secrets = ["litellm-master-key"]`, `secrets = ["../../escaped"]`)
	line := lineOf(t, fleetFile, `secrets = ["../../escaped"]`)
	code, out, errOut := run(t, "secret", "encrypt", "-f", fleetFile, "--env", "prod", "--service", "litellm", "--name", "../../escaped", "--from-literal", "k=v")
	if want := "fleet.toml:" + line + ":"; code != ExitFailed || !strings.Contains(errOut, want) || !strings.Contains(errOut, `stack.services.litellm.secrets[0]: "../../escaped" is not a valid Secret name`) {
		t.Errorf("secret encrypt of ../../escaped: exit %d, want 1 at %s…\n%s%s", code, want, out, errOut)
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "*escaped*")); len(matches) > 0 {
		t.Errorf("written outside the repository: %v", matches)
	}

	editFleet(t, fleetFile, `secrets = ["../../escaped"]`, `secrets = ["litellm-master-key"]`)
	editFleet(t, fleetFile, `environment = "staging"`, `environment = "base"`)
	line = lineOf(t, fleetFile, `environment = "base"`)
	if code, out, errOut := run(t, "render", "-f", fleetFile); code != ExitFailed || !strings.Contains(errOut, "fleet.toml:"+line+":") || !strings.Contains(errOut, `clusters.stg-h100.environment: "base" is reserved`) {
		t.Errorf("render with an environment named base: exit %d\n%s%s", code, out, errOut)
	}
	editFleet(t, fleetFile, `environment = "base"`, `environment = "staging"`)

	elsewhere := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "apps"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, "apps", "prod")); err != nil {
		t.Skipf("symbolic links unavailable here: %v", err)
	}
	code, out, errOut = run(t, "secret", "encrypt", "-f", fleetFile, "--env", "prod", "--service", "litellm", "--name", "litellm-master-key", "--from-literal", "master-key=x")
	if code != ExitFailed || !strings.Contains(errOut, "apps/prod is a symbolic link") {
		t.Errorf("secret encrypt through a linked folder: exit %d\n%s%s", code, out, errOut)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("secret encrypt wrote through the link: %v", entries)
	}
}

// lineOf is the 1-based line of text in file, as a string.
func lineOf(t *testing.T, file, text string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), text)
	if i < 0 {
		t.Fatalf("no %q in %s", text, file)
	}
	return strconv.Itoa(strings.Count(string(b[:i]), "\n") + 1)
}
