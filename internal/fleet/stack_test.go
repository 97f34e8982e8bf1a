package fleet

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStackValidation(t *testing.T) {
	base := mustRead(t, "../../examples/fleet.toml")
	tests := []struct {
		name string
		edit func(string) string
		want []string
	}{
		{
			name: "unknown dependency",
			edit: func(s string) string {
				return strings.Replace(s, `depends-on = ["litellm"]`, `depends-on = ["litelm"]`, 1)
			},
			want: []string{`stack.services.chat.depends-on[0]: unknown service "litelm" (did you mean "litellm"?)`},
		},
		{
			name: "dependency cycle",
			edit: func(s string) string {
				return strings.Replace(s, "[stack.services.qdrant]\n", "[stack.services.qdrant]\ndepends-on = [\"chat\"]\n", 1)
			},
			want: []string{`stack.services.chat.depends-on: dependency cycle: chat → litellm → qdrant → chat`},
		},
		{
			name: "MIG profile no pool offers",
			edit: func(s string) string {
				return strings.Replace(s, "[stack.services.tei-rerank.environments.prod]\nmig = \"1g.10gb\"", "[stack.services.tei-rerank.environments.prod]\nmig = \"3g.40gb\"", 1)
			},
			want: []string{`stack.services.tei-rerank.environments.prod.mig: no pool in environment "prod" offers MIG profile 3g.40gb (pools offer: all-1g.10gb)`},
		},
		{
			name: "MIG in an environment without MIG pools, GPU product not in the environment",
			edit: func(s string) string {
				s = strings.Replace(s, "[stack.services.tei-embed.environments.staging]\ngpus = 1", "[stack.services.tei-embed.environments.staging]\nmig = \"1g.10gb\"", 1)
				return strings.Replace(s, "model = \"meta-llama/Llama-3.1-8B-Instruct\"\ngpu-product = \"NVIDIA-H100-80GB-HBM3\"", "model = \"meta-llama/Llama-3.1-8B-Instruct\"\ngpu-product = \"NVIDIA-A100-SXM4-80GB\"", 1)
			},
			want: []string{
				`stack.services.vllm.environments.staging.gpu-product: no pool in environment "staging" has GPU "NVIDIA-A100-SXM4-80GB" (known: NVIDIA-H100-80GB-HBM3)`,
				`stack.services.tei-embed.environments.staging.mig: no pool in environment "staging" offers MIG profile 1g.10gb (pools offer: none)`,
			},
		},
		{
			name: "unknown environment, tag outside range, chart and image both",
			edit: func(s string) string {
				s = strings.Replace(s, "[stack.services.qdrant.environments.prod]", "[stack.services.qdrant.environments.production]", 1)
				s = strings.Replace(s, `tag = "0.8.4"`, `tag = "0.9.1"`, 1)
				return strings.Replace(s, "[stack.services.langfuse]\n", "[stack.services.langfuse]\nimage = \"langfuse/langfuse\"\n", 1)
			},
			want: []string{
				`stack.services.qdrant.environments.production: no cluster has environment "production" (known: prod, staging)`,
				`stack.services.vllm.tag: tag 0.9.1 is outside its tag-range ">=0.8.0 <0.9.0"`,
				`stack.services.langfuse: set either chart or image, not both`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("fleet.toml", []byte(tt.edit(base)))
			var probs Problems
			if !errors.As(err, &probs) {
				t.Fatalf("want Problems, got %v", err)
			}
			var got []string
			for _, p := range probs {
				got = append(got, p.Key+": "+p.Message)
				if p.Line == 0 {
					t.Errorf("%s: no position", p)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServiceOrder(t *testing.T) {
	f, err := Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	order := f.Stack.ServiceNames()
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	for _, n := range order {
		for _, d := range f.Stack.Services[n].DependsOn {
			if pos[d] > pos[n] {
				t.Errorf("%s comes before its dependency %s in %v", n, d, order)
			}
		}
	}
	if order[0] != "qdrant" || order[len(order)-1] != "langfuse" {
		t.Errorf("order %v: want data first, observability last", order)
	}
}
