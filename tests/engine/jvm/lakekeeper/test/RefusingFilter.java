package lakekeeper.test;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicInteger;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;

/**
 * A Spark web UI filter (spark.ui.filters) that refuses to start on the UI's pages - not on the root
 * path, where the placeholder page is bound first - the first "refusals" times in this JVM: a context's
 * start then fails where Spark attaches the UI's pages (SparkUI.attachAllHandlers), as it does when the
 * YARN ApplicationMaster's filter arrives during that step (tests/engine/test_engine_start.py).
 */
public class RefusingFilter implements Filter {
  private static final AtomicInteger REFUSED = new AtomicInteger();

  @Override
  public void init(FilterConfig conf) throws ServletException {
    String refusals = conf.getInitParameter("refusals");
    String path = conf.getServletContext().getContextPath();
    if (refusals == null || path.isEmpty() || "/".equals(path)) {
      return;
    }
    int n = REFUSED.incrementAndGet();
    if (n <= Integer.parseInt(refusals)) {
      throw new ServletException("lakekeeper test filter: start " + n + " of " + path + " refused");
    }
  }

  @Override
  public void doFilter(ServletRequest req, ServletResponse resp, FilterChain chain)
      throws IOException, ServletException {
    chain.doFilter(req, resp);
  }

  @Override
  public void destroy() {
  }
}
