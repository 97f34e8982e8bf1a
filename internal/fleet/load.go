package fleet

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
)

// rawFile is the fleet file as decoded, before validation.
type rawFile struct {
	Charts     Charts              `toml:"charts"`
	Controller Controller          `toml:"controller"`
	GitOps     rawGitOps           `toml:"gitops"`
	Releases   map[string]*Release `toml:"releases"`
	Clusters   map[string]*Cluster `toml:"clusters"`
	Waves      []*Wave             `toml:"waves"`
	Policy     rawPolicy           `toml:"policy"`
	Promotion  Promotion           `toml:"promotion"`
	Stack      *Stack              `toml:"stack"`
}

// Load reads and validates the fleet file at path. Invalid input returns
// Problems listing everything wrong with it.
func Load(path string) (*Fleet, error) {
	return LoadContext(context.Background(), path)
}

// LoadContext is Load that returns when ctx is done (Ctrl-C), even while
// the file is being parsed.
func LoadContext(ctx context.Context, path string) (*Fleet, error) {
	data, err := readCapped(path)
	if err != nil {
		return nil, err
	}
	return ParseContext(ctx, path, data)
}

// readCapped reads a fleet file of at most MaxFileSize bytes.
func readCapped(path string) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read fleet file: %w", err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read fleet file: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, tooLarge(path)
	}
	return data, nil
}

func tooLarge(name string) error {
	return Problems{{File: name, Line: 1, Column: 1, Message: fmt.Sprintf("the file is larger than %d MB, the most a fleet file may be: is it the fleet file?", MaxFileSize>>20)}}
}

// ParseContext is Parse that returns ctx's error as soon as ctx is done.
// Parsing itself cannot stop half-way, so it goes on in the background
// until it ends (in time linear in the file, at most MaxFileSize); a
// command returns at once.
func ParseContext(ctx context.Context, name string, data []byte) (*Fleet, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type result struct {
		f   *Fleet
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := Parse(name, data)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("read %s: %w", name, context.Cause(ctx))
	}
}

// Parse validates data as a fleet file; name is used in messages.
func Parse(name string, data []byte) (*Fleet, error) {
	if len(data) > MaxFileSize {
		return nil, tooLarge(name)
	}
	probs := &problemList{file: name, pos: indexPositions(data)}

	unknown, stop := checkFile(data)
	if stop != nil {
		// A syntax or type error stops decoding: nothing after it can
		// be trusted.
		probs.addAt(stop.line, stop.col, stop.key, stop.msg)
		return nil, probs.list.sorted()
	}
	// Every unknown key is reported; the known ones decode, so validation
	// goes on and reports the rest too.
	for _, k := range unknown {
		probs.addAt(k.line, k.col, k.key, k.msg)
	}
	// A table in the wrong shape would decode into something the file
	// does not say (a list of one pool with none of its keys): the shape
	// problems stand alone.
	if checkShapes(data, probs) {
		return nil, probs.list.sorted()
	}
	var raw rawFile
	if stop := decodeChecked(data, &raw); stop != nil {
		probs.addAt(stop.line, stop.col, stop.key, stop.msg)
		return nil, probs.list.sorted()
	}

	f := &Fleet{
		Path:       name,
		Source:     data,
		positions:  probs.pos,
		Charts:     raw.Charts,
		Controller: raw.Controller,
		Releases:   orEmpty(raw.Releases),
		Clusters:   orEmpty(raw.Clusters),
		Waves:      raw.Waves,
		Promotion:  raw.Promotion,
		Stack:      raw.Stack,
		policy:     raw.Policy,
		gitops:     raw.GitOps,
	}
	f.clusterNames = slices.Sorted(maps.Keys(f.Clusters))
	f.validate(probs)
	if len(probs.list) > 0 {
		return nil, probs.list.sorted()
	}
	return f, nil
}

func orEmpty[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// ReleaseNames returns the release names, sorted.
func (f *Fleet) ReleaseNames() []string { return slices.Sorted(maps.Keys(f.Releases)) }

// ClusterNames returns the cluster names, sorted. Parse sorts them once:
// commands over a large fleet ask for them per cluster and per service.
func (f *Fleet) ClusterNames() []string {
	if len(f.clusterNames) == len(f.Clusters) && f.clusterNames != nil {
		return slices.Clone(f.clusterNames)
	}
	return slices.Sorted(maps.Keys(f.Clusters))
}

// Position returns where key is written in the fleet file (see Problem.Key
// for the key syntax); 0, 0 when it is not.
func (f *Fleet) Position(key string) (line, col int) { return f.positions.lookup(key) }
