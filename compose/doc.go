// Package compose holds docker-compose.yml, the harness's 3-node ensemble
// for use by hand (docker-compose -f compose/docker-compose.yml up -d), and
// the test that brings it up, waits for it to serve and takes it down.
package compose

// File is the compose file, relative to this directory.
const File = "docker-compose.yml"
