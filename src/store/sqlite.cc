#include "store/sqlite.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/trust.h"

namespace gputriage::store::sqlite {

core::Error DbError(sqlite3* db, const std::string& path, std::string_view what) {
  int code = db != nullptr ? sqlite3_extended_errcode(db) : SQLITE_NOMEM;
  const char* message = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
  switch (code & 0xff) {
    case SQLITE_NOTADB:
      return core::MakeErrorCode(core::ErrorCode::kDataLoss, "{}: not an SQLite database ({})", path, message);
    case SQLITE_CORRUPT:
      return core::MakeErrorCode(core::ErrorCode::kDataLoss,
                                 "{}: the database is corrupt ({}); move it aside to start afresh", path, message);
    default:
      break;
  }
  // "unable to open database file" alone does not say why: the failed system call's errno does,
  // except on a read-only file system, where SQLite's last call (opening the -wal or -journal
  // file read-only after EROFS) leaves ENOENT: said as what it is.
  int sys_errno = db != nullptr ? sqlite3_system_errno(db) : 0;
  if ((code & 0xff) == SQLITE_CANTOPEN || (code & 0xff) == SQLITE_READONLY) {
    struct statvfs vfs {};
    std::string dir = path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
    if (::statvfs(dir.empty() ? "." : dir.c_str(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY) != 0) {
      core::Error error =
          core::MakeError("{}: {}: {} (SQLite code {}: the file system is read-only)", path, what, message, code);
      error.code = core::ErrorCode::kIo;
      error.sys_errno = EROFS;
      return error;
    }
  }
  if (sys_errno != 0) {
    core::Error error =
        core::MakeError("{}: {}: {} (SQLite code {}: {})", path, what, message, code, std::strerror(sys_errno));
    error.code = core::ErrorCodeFromErrno(sys_errno);
    error.sys_errno = sys_errno;
    return error;
  }
  return core::MakeError("{}: {}: {} (SQLite code {})", path, what, message, code);
}

namespace {

core::Error ErrnoError(const std::string& path, std::string_view what, int err) {
  core::Error error = what.empty() ? core::MakeError("{}: {}", path, std::strerror(err))
                                   : core::MakeError("{}: {}: {}", path, what, std::strerror(err));
  error.code = core::ErrorCodeFromErrno(err);
  error.sys_errno = err;
  return error;
}

// Creates the database file owner-only before SQLite opens it. SQLite would create it with 0644
// minus the umask, and it gives the -wal, -shm and -journal files it creates the database file's
// mode (os_unix.c, findCreateFileMode), so this one file's mode decides all of them.
core::Result<void> CreateOwnerOnly(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    int err = errno;
    struct stat st {};
    if (err == EEXIST && ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      // A planted link would make SQLite create or open whatever it points at (issue 32).
      return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                                 "{}: a symbolic link: refusing to open the history store through it (remove it)",
                                 path);
    }
    if (err == EEXIST) return {};  // there already, its mode is its owner's choice
    return ErrnoError(path, "cannot create", err);
  }
  // The umask may have taken the owner's bits too; 0600 exactly, whatever it is.
  int changed = ::fchmod(fd, 0600);
  int err = errno;
  ::close(fd);
  if (changed != 0) return ErrnoError(path, "cannot set mode 0600", err);
  return {};
}

core::Result<Connection> OpenWith(const std::string& name, const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  // Never through a symbolic link (the database file itself): a link planted in a data home
  // another user controls would point the store anywhere.
  int rc = sqlite3_open_v2(name.c_str(), &raw, flags | SQLITE_OPEN_NOFOLLOW, nullptr);
  // sqlite3_open_v2 hands back a handle (to be closed) even when it fails.
  Connection connection = Connection::Adopt(raw, path);
  if (rc != SQLITE_OK) return DbError(raw, path, "cannot open");
  sqlite3_extended_result_codes(raw, 1);
  return connection;
}

// `path` as the path of a file: URI ('%', '?' and '#' escaped; https://sqlite.org/uri.html).
std::string FileUri(const std::string& path) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      uri += c;
    }
  }
  return uri;
}

}  // namespace

core::Result<Connection> Connection::Open(const std::string& path) {
  core::Result<void> created = CreateOwnerOnly(path);
  if (!created.ok()) return created.error();
  // As root, a store that another user owns or can write (or whose directories they can) is not
  // written: its contents are read back into what root does (core/trust.h).
  if (::geteuid() == 0) GT_RETURN_IF_ERROR(core::CheckTrusted(path, "history store"));
  return OpenWith(path, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
}

core::Result<Connection> Connection::OpenReadOnly(const std::string& path) {
  // SQLite says "unable to open database file" for a missing file; say what it is.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ErrnoError(path, "", errno);
  return OpenWith(path, path, SQLITE_OPEN_READONLY);
}

core::Result<Connection> Connection::OpenImmutable(const std::string& path) {
  return OpenWith(FileUri(path) + "?immutable=1", path, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
}

core::Result<void> Connection::Exec(const std::string& sql, std::string_view what) {
  if (sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    return DbError(db_.get(), path_, what);
  }
  return {};
}

core::Result<Statement> Statement::Prepare(const Connection& connection, std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(connection.get(), sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
  Statement statement(raw, connection);
  if (rc != SQLITE_OK) {
    return DbError(connection.get(), connection.path(), fmt::format("cannot prepare '{}'", sql));
  }
  return statement;
}

void Statement::BindText(int index, std::optional<std::string_view> value) {
  if (!value) {
    BindNull(index);
    return;
  }
  sqlite3_bind_text64(stmt_.get(), index, value->data(), value->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

core::Result<bool> Statement::Step(std::string_view what) {
  int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return DbError(db_, path_, what);
}

std::optional<std::string> Statement::ColumnText(int column) const {
  if (ColumnIsNull(column)) return std::nullopt;
  const unsigned char* text = sqlite3_column_text(stmt_.get(), column);
  int size = sqlite3_column_bytes(stmt_.get(), column);
  if (text == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size));
}

core::Result<Transaction> Transaction::Begin(Connection* connection) {
  core::Result<void> begun = connection->Exec("BEGIN IMMEDIATE", "cannot begin a transaction");
  if (!begun.ok()) return begun.error();
  return Transaction(connection);
}

Transaction::~Transaction() {
  if (open_) sqlite3_exec(connection_->get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

core::Result<void> Transaction::Commit() {
  core::Result<void> done = connection_->Exec("COMMIT", "cannot commit");
  if (done.ok()) open_ = false;
  return done;
}

}  // namespace gputriage::store::sqlite
