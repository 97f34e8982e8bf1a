package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/fsutil"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/secrets"
)

func newSecretCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret",
		Short: "Encrypt and edit the serving stack's Secrets with SOPS and age",
		Long: `The serving stack's Secrets live in the fleet repository encrypted with SOPS to
each environment's age recipients ([stack.age-recipients] in the fleet file);
kustomize-controller decrypts them with the cluster's flux-system/sops-age key.
No plaintext Secret is ever written into the repository.

Like the Flux CLI, gpufleet leaves the encryption to the sops program (v3.9 or
newer): --sops, else $GPUFLEET_SOPS, else sops on PATH. The files are what
sops itself writes and reads.`,
	}
	var sopsPath string
	cmd.PersistentFlags().StringVar(&sopsPath, "sops", "", "the sops program (default: $"+secrets.EnvSOPS+", else sops on PATH)")
	cmd.AddCommand(newSecretEncryptCommand(s, &sopsPath), newSecretEditCommand(s, &sopsPath))
	return cmd
}

// findSOPS locates sops for a secret command; a missing sops means the
// command cannot find out anything (exit 3), and says how to install it.
func findSOPS(path string) (*secrets.SOPS, error) {
	tool, err := secrets.Find(path)
	if err != nil {
		return nil, withCode(ExitUnknown, err)
	}
	return tool, nil
}

// sopsExit is the exit code for an error of a secrets call: sops could not
// be run, or the plaintext has nowhere safe to go (3); sops or gpufleet
// refused the input (1).
func sopsExit(err error) int {
	if errors.Is(err, secrets.ErrStart) || errors.Is(err, secrets.ErrNoMemoryDir) {
		return ExitUnknown
	}
	return ExitFailed
}

type secretEncryptOptions struct {
	fleetFile, env, service, name, namespace string
	webhookToken                             bool
	literals, files                          []string
	sops                                     *string
}

func newSecretEncryptCommand(s Streams, sopsPath *string) *cobra.Command {
	o := &secretEncryptOptions{sops: sopsPath}
	cmd := &cobra.Command{
		Use:   "encrypt (--env ENV --service SVC --name NAME | --webhook-token) (--from-literal KEY=VALUE | --from-file KEY=PATH)...",
		Short: "Write a SOPS-encrypted Secret a service declares (or the push webhook token)",
		Long: `encrypt builds a Secret in memory from the given keys and writes it, encrypted, to
the place the rendered overlay lists it:

  apps/<env>/<service>/secret-<name>.sops.yaml      (a service's secret; NAME must be
                                                     in the service's secrets = [...])
  infrastructure/webhook/secret-webhook-token.sops.yaml   (--webhook-token: the token
                                                     of the push Receiver, for every environment)

Only data values are encrypted. The plaintext never touches the disk.`,
		Example: `  gpufleet secret encrypt --env prod --service litellm --name litellm-master-key --from-file master-key=/dev/stdin
  gpufleet secret encrypt --webhook-token --from-literal token=$(openssl rand -hex 20)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), s.Out)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file; the Secret is written beside it")
	cmd.Flags().StringVar(&o.env, "env", "", "the environment")
	cmd.Flags().StringVar(&o.service, "service", "", "the service that reads the Secret")
	cmd.Flags().StringVar(&o.name, "name", "", "the Secret's name, as the service declares it")
	cmd.Flags().StringVar(&o.namespace, "namespace", "", "the Secret's namespace (default: the service's)")
	cmd.Flags().BoolVar(&o.webhookToken, "webhook-token", false, "encrypt the push Receiver's token instead")
	cmd.Flags().StringArrayVar(&o.literals, "from-literal", nil, "KEY=VALUE (repeatable)")
	cmd.Flags().StringArrayVar(&o.files, "from-file", nil, "KEY=PATH: the value is the file's content (repeatable; /dev/stdin works)")
	return cmd
}

func (o *secretEncryptOptions) run(ctx context.Context, out io.Writer) error {
	f, err := loadFleet(ctx, o.fleetFile)
	if err != nil {
		return err
	}
	if f.Stack == nil || len(f.Stack.AgeRecipients) == 0 {
		return withCode(ExitFailed, errors.New("the fleet file has no [stack.age-recipients]: nothing to encrypt to"))
	}
	data, err := o.data()
	if err != nil {
		return withCode(ExitUsage, err)
	}
	var rel, name, namespace string
	var recipients []string
	switch {
	case o.webhookToken:
		rel, name, namespace = render.WebhookSecretFile, render.WebhookSecretName, "flux-system"
		for _, env := range f.Environments() {
			if r, ok := f.Stack.AgeRecipients[env]; ok {
				recipients = append(recipients, r)
			}
		}
	default:
		if o.env == "" || o.service == "" || o.name == "" {
			return withCode(ExitUsage, errors.New("give --env, --service and --name, or --webhook-token"))
		}
		svc, ok := f.Stack.Services[o.service]
		if !ok {
			return withCode(ExitUsage, fmt.Errorf("unknown service %q", o.service))
		}
		if !slices.Contains(svc.Secrets, o.name) {
			return withCode(ExitUsage, fmt.Errorf("service %s does not declare a secret %q: add it to secrets = [...] in the fleet file first (declared: %v)", o.service, o.name, svc.Secrets))
		}
		r, ok := f.Stack.AgeRecipients[o.env]
		if !ok {
			return withCode(ExitUsage, fmt.Errorf("environment %q has no age recipient in [stack.age-recipients]", o.env))
		}
		rel, name, namespace, recipients = render.SecretFile(o.env, o.service, o.name), o.name, svc.Namespace, []string{r}
	}
	if o.namespace != "" {
		namespace = o.namespace
	}
	// The names in rel are the fleet file's, checked when it loaded; the
	// write still lands inside the repository only, through no link.
	dir := filepath.Dir(o.fleetFile)
	if err := fsutil.NoLinks(dir, filepath.FromSlash(rel)); err != nil {
		return withCode(ExitFailed, fmt.Errorf("write %s: %w", rel, err))
	}
	tool, err := findSOPS(*o.sops)
	if err != nil {
		return err
	}
	enc, err := tool.EncryptSecret(ctx, secrets.NewSecret(name, namespace, data), recipients)
	if err != nil {
		return withCode(sopsExit(err), err)
	}
	target := filepath.Join(dir, filepath.FromSlash(rel))
	if err := fsutil.WriteFileAtomic(target, enc); err != nil {
		return withCode(ExitUnknown, err)
	}
	fmt.Fprintf(out, "wrote %s (Secret %s/%s, %d key(s), encrypted to %d recipient(s))\n", rel, namespace, name, len(data), len(recipients))
	return nil
}

func (o *secretEncryptOptions) data() (map[string]string, error) {
	data := map[string]string{}
	for _, kv := range o.literals {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--from-literal %q: want KEY=VALUE", kv)
		}
		data[k] = v
	}
	for _, kp := range o.files {
		k, p, ok := strings.Cut(kp, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--from-file %q: want KEY=PATH", kp)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--from-file %s: %w", k, err)
		}
		data[k] = string(b)
	}
	if len(data) == 0 {
		return nil, errors.New("no data: give --from-literal KEY=VALUE or --from-file KEY=PATH")
	}
	return data, nil
}

func newSecretEditCommand(s Streams, sopsPath *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "edit FILE",
		Short: "Decrypt a SOPS-encrypted Secret into $EDITOR and encrypt it again to the same recipients",
		Long: `edit decrypts FILE with the age identity in SOPS_AGE_KEY_FILE or SOPS_AGE_KEY,
opens the plaintext in $EDITOR and writes it back encrypted to the recipients
it had. An unchanged file is left as it was.

The editor gets the plaintext as a private file on a memory-backed file system
($XDG_RUNTIME_DIR or /dev/shm, a tmpfs), removed as soon as the editor exits;
where there is none, edit refuses rather than put the plaintext on a disk.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editSecret(cmd.Context(), args[0], *sopsPath, s)
		},
	}
	return cmd
}

func editSecret(ctx context.Context, file, sopsPath string, s Streams) error {
	enc, err := os.ReadFile(file)
	if err != nil {
		return withCode(ExitUnknown, err)
	}
	ids, err := secrets.IdentitiesFromEnv()
	if err != nil {
		return withCode(ExitUsage, err)
	}
	tool, err := findSOPS(sopsPath)
	if err != nil {
		return err
	}
	res, err := tool.Edit(ctx, enc, secrets.EditOptions{
		Identities: ids,
		Name:       filepath.Base(strings.TrimSuffix(file, ".sops.yaml")),
		Edit: func(ctx context.Context, path string) error {
			editor := os.Getenv("EDITOR")
			if editor == "" {
				editor = "vi"
			}
			cmd := exec.CommandContext(ctx, "sh", "-c", editor+` "$1"`, "editor", path)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = s.In, s.Out, s.Err
			return cmd.Run()
		},
	})
	if err != nil {
		return withCode(sopsExit(err), fmt.Errorf("%s: %w", file, err))
	}
	if res.Encrypted == nil {
		fmt.Fprintln(s.Out, "unchanged")
		return nil
	}
	if err := fsutil.WriteFileAtomic(file, res.Encrypted); err != nil {
		return withCode(ExitUnknown, err)
	}
	fmt.Fprintf(s.Out, "wrote %s, encrypted to %d recipient(s)\n", file, len(res.Recipients))
	return nil
}
