//===- Connection.cpp -----------------------------------------------------===//
#include "runtime/server/Connection.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace volt::server {
namespace {

bool endpoint(const sockaddr_storage &addr, socklen_t len, std::string &host, int &port) {
  char h[NI_MAXHOST], s[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr *>(&addr), len, h, sizeof h, s, sizeof s,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = h;
  port = std::atoi(s);
  return true;
}

bool localEndpoint(int fd, std::string &host, int &port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
    return false;
  if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6)
    return false;
  return endpoint(addr, len, host, port);
}

bool remoteEndpoint(int fd, std::string &host, int &port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
    return false;
  return endpoint(addr, len, host, port);
}

/// The open descriptors of this process that are sockets.
std::vector<int> openSockets() {
  std::vector<int> fds;
  DIR *dir = opendir("/proc/self/fd");
  if (!dir)
    return fds;
  int self = dirfd(dir);
  while (dirent *e = readdir(dir)) {
    char *end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == self)
      continue;
    struct stat st {};
    if (fstat(int(fd), &st) == 0 && S_ISSOCK(st.st_mode))
      fds.push_back(int(fd));
  }
  closedir(dir);
  return fds;
}

bool isListening(int fd) {
  int value = 0;
  socklen_t len = sizeof value;
  return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &len) == 0 && value != 0;
}

bool matches(int fd, const std::string &localAddr, int localPort, const std::string &remoteAddr,
             int remotePort) {
  std::string host;
  int port = 0;
  if (!remoteEndpoint(fd, host, port) || port != remotePort || host != remoteAddr)
    return false;
  return localEndpoint(fd, host, port) && port == localPort && host == localAddr;
}

// A worker thread serves one connection at a time, often many requests
// over one keep-alive connection: remember the last descriptor found.
thread_local int cachedFd = -1;

} // namespace

int findConnectionSocket(const std::string &localAddr, int localPort, const std::string &remoteAddr,
                         int remotePort) {
  if (cachedFd >= 0 && matches(cachedFd, localAddr, localPort, remoteAddr, remotePort))
    return cachedFd;
  for (int fd : openSockets())
    if (!isListening(fd) && matches(fd, localAddr, localPort, remoteAddr, remotePort))
      return cachedFd = fd;
  return -1;
}

int findListeningSocket(int port) {
  for (int fd : openSockets()) {
    std::string host;
    int p = 0;
    if (isListening(fd) && localEndpoint(fd, host, p) && p == port)
      return fd;
  }
  return -1;
}

bool peerClosed(int fd) {
  if (fd < 0)
    return false;
  pollfd p{fd, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0)
    return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

bool setListenBacklog(int fd, int backlog) { return listen(fd, backlog) == 0; }

void stopAccepting(int fd) { shutdown(fd, SHUT_RDWR); }

} // namespace volt::server
