//===- Connection.h - the sockets under the HTTP library -------*- C++ -*-===//
//
// cpp-httplib 0.11 does not tell a handler when its client goes away, nor
// let the listening socket's backlog be set. Both are needed: a client that
// disconnects must have its request cancelled at once (freeing its KV-cache
// blocks) even while nothing is being written to it, and a burst of
// hundreds of connections must not overflow a backlog of 5. These helpers
// find the kernel sockets by their addresses, which name a TCP connection
// uniquely, and look at them directly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace volt::server {

/// The descriptor of this process's connected TCP socket whose local and
/// remote endpoints are these (numeric addresses as getnameinfo writes
/// them), or -1. The result stays valid while the connection's handler
/// runs, since the HTTP library closes it only afterwards.
int findConnectionSocket(const std::string &localAddr, int localPort, const std::string &remoteAddr,
                         int remotePort);

/// The descriptor of this process's listening TCP socket on `port`, or -1.
int findListeningSocket(int port);

/// Whether the peer of a connected socket has closed or reset it (checked
/// without blocking and without consuming data).
bool peerClosed(int fd);

/// Sets the accept backlog of a listening socket.
bool setListenBacklog(int fd, int backlog);

/// Makes accept() on a listening socket fail from now on, so that the
/// HTTP library's accept loop ends; connections already accepted go on.
void stopAccepting(int fd);

} // namespace volt::server
