// Package fsutil holds the small file-system helpers several commands need.
package fsutil
