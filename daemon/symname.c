/* SPDX-License-Identifier: Apache-2.0 */
/* symname.c — see symname.h. */
#include "symname.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Search the ELF file `path` (mapped read-only) for the FUNC symbol that
 * contains offset `off`; copy its name. */
static int elf_lookup(const char *path, uint64_t off, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC), found = -1;
  struct stat st;
  const unsigned char *m;
  if (fd < 0) return -1;
  if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(ElfW(Ehdr))) {
    close(fd);
    return -1;
  }
  m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return -1;
  {
    const ElfW(Ehdr) *eh = (const void *)m;
    size_t size = (size_t)st.st_size;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shoff == 0 ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)) > size)
      goto out;
    const ElfW(Shdr) *sh = (const void *)(m + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum && found < 0; i++) {
      if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
      const ElfW(Shdr) *strs = &sh[sh[i].sh_link];
      if (sh[i].sh_offset + sh[i].sh_size > size || strs->sh_offset + strs->sh_size > size)
        continue;
      const ElfW(Sym) *sym = (const void *)(m + sh[i].sh_offset);
      size_t n = sh[i].sh_size / sizeof(ElfW(Sym));
      for (size_t k = 0; k < n; k++) {
        if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || sym[k].st_name >= strs->sh_size)
          continue;
        if (off < sym[k].st_value || off >= sym[k].st_value + (sym[k].st_size ? sym[k].st_size : 1))
          continue;
        const char *name = (const char *)(m + strs->sh_offset + sym[k].st_name);
        snprintf(buf, len, "%.*s", (int)strnlen(name, strs->sh_size - sym[k].st_name), name);
        found = 0;
        break;
      }
    }
  }
out:
  munmap((void *)(uintptr_t)m, (size_t)st.st_size);
  return found;
}

const char *symname_of(const void *addr, char *buf, size_t len) {
  Dl_info info;
  if (len == 0) return buf;
  buf[0] = '\0';
  if (!dladdr(addr, &info) || !info.dli_fname) {
    snprintf(buf, len, "kernel@%p", addr);
    return buf;
  }
  if (info.dli_sname && info.dli_saddr == addr) {
    snprintf(buf, len, "%s", info.dli_sname);
    return buf;
  }
  {
    uint64_t off = (uint64_t)((uintptr_t)addr - (uintptr_t)info.dli_fbase);
    const char *base = strrchr(info.dli_fname, '/');
    if (elf_lookup(info.dli_fname, off, buf, len) == 0) return buf;
    snprintf(buf, len, "%s+0x%llx", base ? base + 1 : info.dli_fname, (unsigned long long)off);
  }
  return buf;
}
