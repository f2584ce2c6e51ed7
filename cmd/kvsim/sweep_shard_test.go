package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"kvsim/results"
)

// shardSweep is the sweep the shard tests run: values given out of order,
// so that the index's order (by value) is not the points' order.
var shardSweep = []string{"sweep", "--quiet", "--limit", "200", "--vary", "workload.speedup", "--values", "2,0.5,4,1", "../../scenarios/hbm_dram.toml"}

// sameSweepFolders checks that two sweep folders hold the same results:
// every point's requests.csv and report.html and the index.html byte for
// byte, summary.json byte for byte but for its "run" block (wall-clock
// figures, which differ between any two runs), and no other visible file.
func sameSweepFolders(t *testing.T, a, b string) {
	t.Helper()
	files := func(root string) []string {
		var fs []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
				r, _ := filepath.Rel(root, p)
				fs = append(fs, r)
			}
			return nil
		})
		return fs
	}
	fa, fb := files(a), files(b)
	if !slices.Equal(fa, fb) || len(fa) == 0 {
		t.Fatalf("files differ:\n%v\n%v", fa, fb)
	}
	for _, f := range fa {
		x, y := reportReadFile(t, filepath.Join(a, f)), reportReadFile(t, filepath.Join(b, f))
		if filepath.Base(f) == results.SummaryFile {
			x, y = summaryWithoutRun(t, filepath.Join(a, f)), summaryWithoutRun(t, filepath.Join(b, f))
		}
		if x != y {
			t.Errorf("%s differs", f)
		}
	}
}

func summaryWithoutRun(t *testing.T, path string) string {
	t.Helper()
	s, err := results.ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Run = results.Run{}
	b, err := results.MarshalJSON(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSweepShardMerge: three shards into one folder, then merge, give
// the unsharded sweep's folder; a merge before the last shard writes
// nothing and says which points are missing; a shard run again keeps its
// finished points untouched.
func TestSweepShardMerge(t *testing.T) {
	dir := t.TempDir()
	full, sh := filepath.Join(dir, "full"), filepath.Join(dir, "sh")
	if _, stderr, code := runKvsim(append(shardSweep, "--out", full)...); code != 0 {
		t.Fatalf("sweep: status %d: %s", code, stderr)
	}
	shard := func(i string) {
		t.Helper()
		if _, stderr, code := runKvsim(append(shardSweep, "--out", sh, "--shard", i)...); code != 0 {
			t.Fatalf("sweep --shard %s: status %d: %s", i, code, stderr)
		}
	}
	shard("0/3")
	shard("2/3")
	if _, err := os.Stat(filepath.Join(sh, results.IndexFile)); err == nil {
		t.Error("a shard wrote index.html")
	}
	// Shard 1 of 3 has point 1 alone (0.5).
	_, stderr, code := runKvsim("merge", sh)
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "1 of 4 points are not done (hbm_dram-workload.speedup-0.5)") {
		t.Errorf("merge before shard 1: status %d, %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(sh, results.IndexFile)); err == nil {
		t.Error("an incomplete merge wrote index.html")
	}
	shard("1/3")
	if stdout, stderr, code := runKvsim("merge", sh); code != 0 || !strings.Contains(stdout, "merged 4 points") {
		t.Fatalf("merge: status %d: %s%s", code, stdout, stderr)
	}
	sameSweepFolders(t, full, sh)

	// Shards at once into one folder, as on a cluster: each locks its own
	// points' folders, the manifest is written under the folder's lock.
	conc := filepath.Join(dir, "conc")
	var wg sync.WaitGroup
	errs := make([]string, 4)
	for i := range 4 {
		wg.Go(func() {
			if _, stderr, code := runKvsim(append(shardSweep, "--out", conc, "--shard", fmt.Sprintf("%d/4", i))...); code != 0 {
				errs[i] = fmt.Sprintf("shard %d/4: status %d: %s", i, code, stderr)
			}
		})
	}
	wg.Wait()
	if e := strings.Join(errs, ""); e != "" {
		t.Fatal(e)
	}
	if _, stderr, code := runKvsim("merge", conc); code != 0 {
		t.Fatalf("merge: status %d: %s", code, stderr)
	}
	sameSweepFolders(t, full, conc)

	// A finished point is not run again: its summary (wall-clock figures
	// included) stays as it was.
	p := filepath.Join(sh, "hbm_dram-workload.speedup-2", results.SummaryFile)
	before, _ := os.ReadFile(p)
	stdout, stderr, code := runKvsim(slices.DeleteFunc(append(shardSweep, "--out", sh, "--shard", "0/3"), func(s string) bool { return s == "--quiet" })...)
	if code != 0 || !strings.Contains(stdout, "2 already done, kept") {
		t.Errorf("rerun: status %d: %s%s", code, stdout, stderr)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
		t.Error("a rerun of a finished shard rewrote its summary.json")
	}
	// A set cut short (a shard killed between its renames: no report.html)
	// is not done: merge names it, and the shard's rerun runs it again.
	if err := os.Remove(filepath.Join(sh, "hbm_dram-workload.speedup-4", results.PageFile)); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runKvsim("merge", sh); code != 1 || !strings.Contains(stderr, "(hbm_dram-workload.speedup-4)") {
		t.Errorf("merge of a cut set: status %d, %q", code, stderr)
	}
	stdout, stderr, code = runKvsim(slices.DeleteFunc(append(shardSweep, "--out", sh, "--shard", "2/3"), func(s string) bool { return s == "--quiet" })...)
	if code != 0 || !strings.Contains(stdout, "0 already done") {
		t.Errorf("rerun of a cut set: status %d: %s%s", code, stdout, stderr)
	}
	if _, stderr, code := runKvsim("merge", sh); code != 0 {
		t.Fatalf("merge: status %d: %s", code, stderr)
	}
	sameSweepFolders(t, full, sh)

	// Another limit is another run: its points are run again.
	if _, stderr, code := runKvsim(append(shardSweep, "--out", sh, "--shard", "0/3", "--limit", "100")...); code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if s, err := results.ReadSummary(p); err != nil || s.Trace.Requests != 100 {
		t.Errorf("after --limit 100: %v requests (%v)", s.Trace.Requests, err)
	}
	if _, stderr, code := runKvsim("merge", sh); code != 1 || !strings.Contains(stderr, "2 of 4 points are not done") {
		t.Errorf("merge of a changed sweep: status %d, %q", code, stderr)
	}

	// Shards into separate folders, copied into one by merge --into; again,
	// nothing changes.
	var parts []string
	for i := range 3 {
		parts = append(parts, filepath.Join(dir, fmt.Sprintf("part%d", i)))
		if _, stderr, code := runKvsim(append(shardSweep, "--out", parts[i], "--shard", fmt.Sprintf("%d/3", i))...); code != 0 {
			t.Fatalf("shard %d/3: status %d: %s", i, code, stderr)
		}
	}
	into := filepath.Join(dir, "into")
	if stdout, stderr, code := runKvsim(append([]string{"merge", "--into", into}, parts...)...); code != 0 || !strings.Contains(stdout, "merged 4 points from 3 folders") {
		t.Fatalf("merge --into: status %d: %s%s", code, stdout, stderr)
	}
	sameSweepFolders(t, full, into)
	p = filepath.Join(into, "hbm_dram-workload.speedup-2", results.SummaryFile)
	before, _ = os.ReadFile(p)
	if _, stderr, code := runKvsim(append([]string{"merge", "--into", into}, parts...)...); code != 0 {
		t.Fatalf("merge --into again: status %d: %s", code, stderr)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
		t.Error("merge --into again rewrote a point")
	}
	// A missing shard is named; another sweep's folder is refused.
	if _, stderr, code := runKvsim("merge", "--into", filepath.Join(dir, "into2"), parts[0], parts[2]); code != 1 || !strings.Contains(stderr, "1 of 4 points are not done (hbm_dram-workload.speedup-0.5)") {
		t.Errorf("merge --into without shard 1: status %d, %q", code, stderr)
	}
	if _, stderr, code := runKvsim("merge", "--into", filepath.Join(dir, "into3"), parts[0], conc); code != 0 {
		t.Errorf("merge --into of the same sweep from other folders: status %d, %q", code, stderr)
	}

	for _, bad := range [][]string{
		{"merge"},
		{"merge", "--into", filepath.Join(dir, "into4"), parts[0], full},
		{"merge", "--into", filepath.Join(dir, "into4"), parts[0], sh}, // sh's sweep is now --limit 100's
		{"merge", full}, // no manifest: not a sharded sweep
		{"merge", filepath.Join(dir, "none")},
		append(slices.Clone(shardSweep), "--shard", "3/3"),
		append(slices.Clone(shardSweep), "--shard", "1"),
		append(slices.Clone(shardSweep), "--shard", "a/2"),
		append(slices.Clone(shardSweep), "--shard", "0/2", "--emit", "slurm"),
		append(slices.Clone(shardSweep), "--emit", "pbs"),
		append(slices.Clone(shardSweep), "--emit", "k8s", "--shards", "-1"),
		append(slices.Clone(shardSweep), "--shards", "2"),
		append(slices.Clone(shardSweep), "--image", "x"),
		append(slices.Clone(shardSweep), "--emit", "slurm", "--pvc", "x"),
		append(slices.Clone(shardSweep), "--emit", "k8s", "--mount", "rel"),
	} {
		if _, stderr, code := runKvsim(bad...); code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: status %d, %q", bad, code, stderr)
		}
	}
}

// TestSweepEmit: --emit k8s writes an Indexed Job (checked field by
// field: it is not run on a cluster here), --emit slurm an array script
// bash can parse; both run the sweep's own command with --shard, and
// --script replaces only a file --emit wrote.
func TestSweepEmit(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := runKvsim(append(shardSweep, "--out", "res", "--emit", "k8s", "--shards", "3", "--image", "reg/kvsim:1", "--pvc", "data", "--parallelism", "2")...)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	// YAML comments, then JSON (which is YAML).
	var js []string
	for _, l := range strings.Split(stdout, "\n") {
		if !strings.HasPrefix(l, "#") {
			js = append(js, l)
		}
	}
	var job struct {
		APIVersion string `json:"apiVersion"`
		Kind       string
		Spec       struct {
			CompletionMode string
			Completions    int
			Parallelism    int
			Template       struct {
				Spec struct {
					RestartPolicy string
					Containers    []struct {
						Image, WorkingDir string
						Command, Args     []string
						Env               []struct {
							Name      string
							ValueFrom struct{ FieldRef struct{ FieldPath string } }
						}
						VolumeMounts []struct{ Name, MountPath string }
					}
					Volumes []struct {
						Name                  string
						PersistentVolumeClaim struct{ ClaimName string }
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(strings.Join(js, "\n")), &job); err != nil {
		t.Fatalf("not JSON after the comments: %v\n%s", err, stdout)
	}
	s := job.Spec
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || s.CompletionMode != "Indexed" || s.Completions != 3 || s.Parallelism != 2 || s.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("job: %+v", job)
	}
	if len(s.Template.Spec.Containers) != 1 || len(s.Template.Spec.Volumes) != 1 {
		t.Fatalf("containers, volumes: %+v", s.Template.Spec)
	}
	c, v := s.Template.Spec.Containers[0], s.Template.Spec.Volumes[0]
	want := append(slices.Clone(shardSweep), "--out", "res", "--shard", "$(JOB_COMPLETION_INDEX)/3")
	if c.Image != "reg/kvsim:1" || !slices.Equal(c.Command, []string{"kvsim"}) || !slices.Equal(c.Args, want) {
		t.Errorf("container: %q %q %q; want args %q", c.Image, c.Command, c.Args, want)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "JOB_COMPLETION_INDEX" || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("env: %+v", c.Env)
	}
	if v.PersistentVolumeClaim.ClaimName != "data" || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != v.Name || c.VolumeMounts[0].MountPath != c.WorkingDir || c.WorkingDir != "/work" {
		t.Errorf("volume %+v, mounts %+v, working dir %q", v, c.VolumeMounts, c.WorkingDir)
	}
	if !strings.Contains(stdout, "kubectl wait --for=condition=complete") || !strings.Contains(stdout, `"args":["merge","res"]`) {
		t.Errorf("no wait and merge instructions:\n%s", stdout)
	}

	// Slurm, into a file; emitting makes no results folder.
	script := filepath.Join(dir, "sweep.sbatch")
	args := append(slices.Clone(shardSweep), "--out", filepath.Join(dir, "res"), "--emit=slurm", "--shards=4", "--script", script, "--kvsim", "/opt/kvsim")
	if _, stderr, code := runKvsim(args...); code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	b := reportReadFile(t, script)
	for _, w := range []string{"#!/bin/bash\n", "\n#SBATCH --array=0-3\n", "\nexec /opt/kvsim sweep --quiet --limit 200 --vary workload.speedup --values 2,0.5,4,1 ../../scenarios/hbm_dram.toml --out " + filepath.Join(dir, "res") + ` --shard "$SLURM_ARRAY_TASK_ID/4"` + "\n",
		"sbatch --dependency=afterok:$jid", "/opt/kvsim merge " + filepath.Join(dir, "res")} {
		if !strings.Contains(b, w) {
			t.Errorf("script lacks %q:\n%s", w, b)
		}
	}
	if _, err := exec.LookPath("bash"); err == nil {
		if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v: %s", err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "res")); err == nil {
		t.Error("--emit made the results folder")
	}
	// Written again over its own file; never over another.
	if _, stderr, code := runKvsim(args...); code != 0 {
		t.Errorf("again: status %d: %s", code, stderr)
	}
	other := writeFile(t, dir, "mine.sh", "#!/bin/sh\necho mine\n")
	args[len(args)-3] = other
	if _, stderr, code := runKvsim(args...); code != 2 || !strings.Contains(stderr, "was not written by kvsim") {
		t.Errorf("over another file: status %d, %q", code, stderr)
	}
	if reportReadFile(t, other) != "#!/bin/sh\necho mine\n" {
		t.Error("another file was replaced")
	}
}
