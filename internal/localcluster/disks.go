package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/raftcat/raftcat/internal/faultfs"
)

// Disks. With Options.FaultFS every node's data directory is a fault
// filesystem (internal/faultfs) over Dir/disks/NAME: what a node's
// process wrote reaches that directory at once, but only what it synced
// survives PowerCut, and Disk(i) can make the disk fail, fill up, slow
// down or rot.

// mountDisk mounts node i's fault filesystem over its data directory.
func (c *Cluster) mountDisk(nd *node) error {
	if !c.opts.FaultFS {
		return nil
	}
	backing := filepath.Join(c.opts.Dir, "disks", nd.name)
	if err := os.MkdirAll(backing, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(nd.dataDir, 0o755); err != nil {
		return err
	}
	seed := c.opts.FaultSeed*1000 + uint64(len(c.nodes)) + 1
	fs, err := faultfs.Mount(nd.dataDir, backing, faultfs.Options{Seed: seed})
	if err != nil {
		return fmt.Errorf("mount a fault filesystem over %s: %w", nd.dataDir, err)
	}
	nd.disk = fs
	return nil
}

// mountWarehouse mounts a fault filesystem over the nodes' shared
// file:// warehouse (Dir/warehouse, backed by Dir/disks/warehouse): the
// metadata files and manifests the nodes write there keep, after a power
// cut of every node, only what was synced.
func (c *Cluster) mountWarehouse() error {
	if !c.opts.FaultFS {
		return nil
	}
	backing, dir := filepath.Join(c.opts.Dir, "disks", "warehouse"), filepath.Join(c.opts.Dir, "warehouse")
	for _, d := range []string{backing, dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	fs, err := faultfs.Mount(dir, backing, faultfs.Options{Seed: c.opts.FaultSeed * 1000})
	if err != nil {
		return fmt.Errorf("mount a fault filesystem over %s: %w", dir, err)
	}
	c.warehouse = fs
	return nil
}

// Warehouse is the warehouse's fault filesystem (nil without
// Options.FaultFS).
func (c *Cluster) Warehouse() *faultfs.FS { return c.warehouse }

// Disk is node i's fault filesystem (nil without Options.FaultFS).
func (c *Cluster) Disk(i int) *faultfs.FS { return c.nodes[i].disk }

// PowerCut cuts the power of the nodes given, at once: every one is
// killed (SIGKILL), then every write its disk had not synced is dropped
// (torn: a random part of it kept, page by page), and directory entries
// made since their directory's last sync are undone. Once no node runs,
// the warehouse's power is cut too, and its report follows the nodes'.
// The nodes stay down until Restart. It needs Options.FaultFS.
func (c *Cluster) PowerCut(torn bool, nodes ...int) ([]faultfs.CutReport, error) {
	if !c.opts.FaultFS {
		return nil, errors.New("localcluster: PowerCut needs Options.FaultFS")
	}
	for _, i := range nodes {
		c.signal(i, syscall.SIGKILL)
	}
	reports := make([]faultfs.CutReport, len(nodes))
	for k, i := range nodes {
		<-c.nodes[i].exited()
		r, err := c.nodes[i].disk.PowerCut(torn)
		if err != nil {
			return reports, fmt.Errorf("power cut of %s: %w", c.nodes[i].name, err)
		}
		reports[k] = r
	}
	if c.warehouse == nil || c.anyRunning() {
		return reports, nil
	}
	r, err := c.warehouse.PowerCut(torn)
	if err != nil {
		return reports, fmt.Errorf("power cut of the warehouse: %w", err)
	}
	return append(reports, r), nil
}

// anyRunning reports whether any node's process runs.
func (c *Cluster) anyRunning() bool {
	for i := range c.nodes {
		if c.Running(i) {
			return true
		}
	}
	return false
}

// signal sends sig to node i's process, if it runs.
func (c *Cluster) signal(i int, sig syscall.Signal) {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd != nil && nd.cmd.Process != nil {
		if nd.paused {
			_ = nd.cmd.Process.Signal(syscall.SIGCONT)
			nd.paused = false
		}
		_ = nd.cmd.Process.Signal(sig)
	}
}

// exited is closed when node's current process has ended.
func (nd *node) exited() <-chan struct{} {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.done
}

// WaitExit waits for node i's process to end by itself and returns its
// exit status (a node halts on a failed disk, say).
func (c *Cluster) WaitExit(ctx context.Context, i int) (int, error) {
	select {
	case <-c.nodes[i].exited():
	case <-ctx.Done():
		return 0, fmt.Errorf("%s did not exit: %w", c.nodes[i].name, ctx.Err())
	}
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.cmd.ProcessState.ExitCode(), nil
}

// Running reports whether node i's process runs.
func (c *Cluster) Running(i int) bool {
	select {
	case <-c.nodes[i].exited():
		return false
	default:
		return true
	}
}

// unmountDisks unmounts the nodes' fault filesystems and the warehouse's.
func (c *Cluster) unmountDisks() {
	if c.warehouse != nil {
		_ = c.warehouse.Unmount()
	}
	for _, nd := range c.nodes {
		if nd.disk != nil {
			_ = nd.disk.Unmount()
		}
	}
}

// RestartAlone starts a stopped node again without --join: it must find
// its cluster from what its data directory remembers.
func (c *Cluster) RestartAlone(i int) error {
	nd := c.nodes[i]
	full := nd.args
	if k := slices.Index(full, "--join"); k >= 0 {
		nd.args = slices.Delete(slices.Clone(full), k, k+2)
	}
	err := nd.start()
	nd.args = full
	return err
}

// DiskUsage is the bytes node i's data directory holds: the sum of its
// files' sizes, as a fault filesystem's NoSpace Limit counts them.
func (c *Cluster) DiskUsage(i int) (int64, error) {
	var total int64
	err := filepath.WalkDir(c.nodes[i].dataDir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	return total, err
}
