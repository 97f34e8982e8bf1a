// Package sopstest finds, for tests, the sops program that "make testbin"
// builds into the testbed's folder, so that tests encrypt and decrypt with
// the real sops. It is test support: the binaries users install must not
// import it.
package sopstest
