package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"kvsim/experiment"
	"kvsim/internal/atomicfile"
	"kvsim/results"
)

// kvsim sweep --emit writes what runs the sweep's shards on a cluster: a
// Slurm array script or a Kubernetes Indexed Job manifest, each running
// the same kvsim sweep command with --shard and telling how to merge.

// emitOptions are the flags of --emit.
type emitOptions struct {
	target      string // slurm or k8s
	shards      int    // 0: one per point
	script      string // the file to write; stdout if ""
	kvsim       string // the kvsim command the jobs run
	image       string // k8s: the container image
	pvc         string // k8s: the PersistentVolumeClaim holding inputs and results
	mount       string // k8s: where it is mounted, the pods' working directory
	parallelism int    // k8s: pods at once; 0: all
}

// emitFlags are the flags the emitted command drops: they say how to emit,
// not what to sweep.
var emitFlags = map[string]bool{"emit": true, "shards": true, "script": true, "kvsim": true, "image": true, "pvc": true, "mount": true, "parallelism": true}

// k8sFlags are the emit flags of --emit k8s alone.
var k8sFlags = map[string]bool{"image": true, "pvc": true, "mount": true, "parallelism": true}

func addEmitFlags(fs *flag.FlagSet, e *emitOptions) {
	fs.StringVar(&e.target, "emit", "", "write, instead of running the sweep, what runs its shards on a cluster: `TARGET` slurm (an array script) or k8s (an Indexed Job manifest)")
	fs.IntVar(&e.shards, "shards", 0, "with --emit: how many shards (`N`; default one per point)")
	fs.StringVar(&e.script, "script", "", "with --emit: write to `FILE` (default: stdout)")
	fs.StringVar(&e.kvsim, "kvsim", "", "with --emit: the kvsim `COMMAND` the jobs run (default: this kvsim's absolute path for slurm, kvsim for k8s)")
	fs.StringVar(&e.image, "image", "kvsim:latest", "with --emit k8s: the container `IMAGE` holding kvsim")
	fs.StringVar(&e.pvc, "pvc", "kvsim-results", "with --emit k8s: the PersistentVolumeClaim `NAME` holding the inputs and receiving the results")
	fs.StringVar(&e.mount, "mount", "/work", "with --emit k8s: where the claim is mounted, the pods' working `DIR`")
	fs.IntVar(&e.parallelism, "parallelism", 0, "with --emit k8s: pods at once (`N`; default: every shard)")
}

// check refuses flags that do not go together, before any work; given
// are the flags given.
func (e *emitOptions) check(sharded bool, given map[string]bool) error {
	for _, name := range sortedKeys(emitFlags) {
		switch {
		case name == "emit" || !given[name]:
		case e.target == "":
			return badInputf("sweep: --%s goes with --emit slurm|k8s", name)
		case e.target == "slurm" && k8sFlags[name]:
			return badInputf("sweep: --%s goes with --emit k8s", name)
		}
	}
	switch {
	case e.target == "":
		return nil
	case e.target != "slurm" && e.target != "k8s":
		return badInputf("sweep: --emit %q: want slurm or k8s", e.target)
	case sharded:
		return badInputf("sweep: --emit writes the shards' jobs; give --shard or --emit, not both")
	case e.shards < 0:
		return badInputf("sweep: --shards %d: want N >= 1", e.shards)
	case e.parallelism < 0:
		return badInputf("sweep: --parallelism %d: want N >= 1", e.parallelism)
	case e.target == "k8s" && !filepath.IsAbs(e.mount):
		return badInputf("sweep: --mount %q: want an absolute path", e.mount)
	}
	return nil
}

// emittedMark is in the first lines of every file --emit writes: --script
// replaces only such a file.
const emittedMark = "# Written by kvsim sweep --emit "

// write writes the jobs for a sweep of points points, run by args (the
// sweep's command line) minus the emit flags; out and assets are the
// sweep's, ins the files it reads (never replaced by --script).
func (e *emitOptions) write(stdout io.Writer, fs *flag.FlagSet, args []string, points int, out, assets string, ins []role) error {
	n := e.shards
	if n == 0 {
		n = points
	}
	if e.script != "" {
		if err := checkOutFile("sweep: --script", e.script); err != nil {
			return err
		}
		if err := checkNotInput("sweep: --script", e.script, append(ins, role{"the sweep's results folder", out})); err != nil {
			return err
		}
		isOurs := func(p string) bool { return bytes.Contains(results.Head(p, 512), []byte(emittedMark)) }
		if err := experiment.CheckReplace("sweep: --script", e.script, isOurs, "move it or give another --script"); err != nil {
			return err
		}
	}
	cmd := append([]string{"sweep"}, sweepArgs(fs, args)...)
	var b bytes.Buffer
	if e.target == "slurm" {
		if err := e.slurm(&b, cmd, n, out, assets); err != nil {
			return err
		}
	} else {
		e.k8s(&b, cmd, n, out, assets)
	}
	if e.script == "" {
		_, err := stdout.Write(b.Bytes())
		return err
	}
	if err := atomicfile.Write(e.script, b.Bytes()); err != nil {
		return fmt.Errorf("sweep: --script %s: %w", e.script, experiment.PathErr(err))
	}
	if e.target == "slurm" {
		os.Chmod(e.script, 0o755) // runnable by hand too; sbatch needs no mode
	}
	return nil
}

// sweepArgs are args without the emit flags (and their values), as given
// otherwise: flags and positional arguments in their order.
func sweepArgs(fs *flag.FlagSet, args []string) []string {
	var kept []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(kept, args[i:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			kept = append(kept, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		takesValue := f != nil && !hasValue && !isBoolFlag(f)
		if emitFlags[name] {
			if takesValue {
				i++
			}
			continue
		}
		kept = append(kept, a)
		if takesValue && i+1 < len(args) {
			i++
			kept = append(kept, args[i])
		}
	}
	return kept
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

var shellPlain = regexp.MustCompile(`^[A-Za-z0-9_./:=,@%+-]+$`)

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	if shellPlain.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// mergeArgs is the kvsim merge command for the sweep.
func mergeArgs(out, assets string) []string {
	a := []string{"merge"}
	if assets != "" {
		a = append(a, "--assets", assets)
	}
	return append(a, out)
}

// slurm writes an sbatch array script: task SLURM_ARRAY_TASK_ID runs that
// shard, from the folder the script was emitted in (so that the sweep's
// relative paths hold); the merge is a second job depending on the array.
func (e *emitOptions) slurm(w io.Writer, cmd []string, n int, out, assets string) error {
	kv := e.kvsim
	if kv == "" {
		exe, err := os.Executable()
		if err != nil {
			return badInputf("sweep: --emit slurm: this kvsim's path is unknown (%v); give --kvsim COMMAND", err)
		}
		kv = exe
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("sweep: --emit slurm: %w", err)
	}
	name := e.script
	if name == "" {
		name = "sweep.sbatch"
	}
	merge := shellJoin(append([]string{kv}, mergeArgs(out, assets)...))
	fmt.Fprintf(w, `#!/bin/bash
%sslurm: this kvsim sweep as a Slurm job array
# of %d shards. Task I runs the sweep's points k with k mod %d = I (counted
# from 0 in the order of the values), into one results folder that every
# node must share; each point's folder is complete or absent.
# Submit the array, then the merge, which writes %s once every
# task has succeeded:
#   jid=$(sbatch --parsable %s)
#   sbatch --dependency=afterok:$jid --job-name=kvsim-merge --chdir=%s --wrap=%s
# A failed task can be run again alone (sbatch --array=I %s): points
# already done are kept. Add #SBATCH lines (partition, time limit) as the
# cluster needs.
#SBATCH --job-name=kvsim-sweep
#SBATCH --array=0-%d
#SBATCH --chdir=%s
set -euo pipefail
exec %s %s --shard "$SLURM_ARRAY_TASK_ID/%d"
`, emittedMark, n, n, filepath.Join(out, results.IndexFile), shellQuote(name), shellQuote(cwd), shellQuote(merge), shellQuote(name),
		n-1, shellQuote(cwd), shellQuote(kv), shellJoin(cmd), n)
	return nil
}

// k8s writes an Indexed Job manifest as JSON (which is YAML) after YAML
// comments saying how to apply, wait for and merge it: pod
// JOB_COMPLETION_INDEX runs that shard in the claim's mount, where the
// sweep's relative paths (scenario, trace, --out) must lie.
func (e *emitOptions) k8s(w io.Writer, cmd []string, n int, out, assets string) {
	kv := e.kvsim
	if kv == "" {
		kv = "kvsim"
	}
	par := e.parallelism
	if par == 0 {
		par = n
	}
	volumes := []any{map[string]any{"name": "results", "persistentVolumeClaim": map[string]any{"claimName": e.pvc}}}
	mounts := []any{map[string]any{"name": "results", "mountPath": e.mount}}
	container := func(name string, args []string) map[string]any {
		return map[string]any{"name": name, "image": e.image, "workingDir": e.mount, "command": []string{kv}, "args": args, "volumeMounts": mounts}
	}
	shard := container("kvsim", append(cmd, "--shard", "$(JOB_COMPLETION_INDEX)/"+strconv.Itoa(n)))
	// The Job controller sets it too; declared here so that $(...) in
	// args expands on every Kubernetes that runs Indexed Jobs.
	shard["env"] = []any{map[string]any{"name": "JOB_COMPLETION_INDEX", "valueFrom": map[string]any{
		"fieldRef": map[string]any{"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}}
	job := map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   map[string]any{"name": "kvsim-sweep"},
		"spec": map[string]any{
			"completionMode": "Indexed",
			"completions":    n,
			"parallelism":    par,
			"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never",
				"containers":    []any{shard},
				"volumes":       volumes,
			}},
		},
	}
	merge := map[string]any{"apiVersion": "v1", "spec": map[string]any{
		"containers": []any{container("kvsim-merge", mergeArgs(out, assets))}, "volumes": volumes}}
	mj, _ := json.Marshal(merge)
	fmt.Fprintf(w, `%sk8s: this kvsim sweep as a Kubernetes
# Indexed Job of %d completions. Pod JOB_COMPLETION_INDEX=I runs the sweep's
# points k with k mod %d = I (counted from 0 in the order of the values).
# The claim %s (ReadWriteMany when pods may run on several nodes) is
# mounted at %s, the pods' working directory: it must hold the scenario
# and its trace at the paths below, and receives the results in %s.
# Apply it, wait for it, then merge (writes %s):
#   kubectl apply -f %s
#   kubectl wait --for=condition=complete --timeout=24h job/kvsim-sweep
#   kubectl run kvsim-merge --rm -i --restart=Never --image=%s --overrides=%s
`, emittedMark, n, n, e.pvc, e.mount, out, filepath.Join(out, results.IndexFile), shellQuote(cmp.Or(e.script, "sweep.yaml")), shellQuote(e.image), shellQuote(string(mj)))
	b, _ := json.MarshalIndent(job, "", "  ")
	w.Write(append(b, '\n'))
}
